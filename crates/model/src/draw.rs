//! Layout draws. A deterministic guest (QEMU TCG, `-icount`) repeats a
//! figure exactly, but that figure is one draw of the layout the kernel
//! makes at boot from its random pool (slab freelist order, hash salts,
//! userland addresses), seeded from the wall clock it boots with. A cell
//! run as K draws boots K times, each with its own recorded clock: each
//! draw repeats exactly, and together they sample the layout.

/// The wall clock every guest booted with before draws: draw 0.
pub const RTC_FIXED_BASE: &str = "2000-01-01";
/// The most layout draws a cell is run as.
pub const MAX_DRAWS: u32 = 64;

/// The wall clock a guest boots with in layout draw `draw`: draw 0 is
/// `RTC_FIXED_BASE` (what every cell ran with before draws), draw d
/// boots d seconds later. The kernel seeds its random pool from that clock,
/// so each draw is another slab freelist order, hash salt and userland
/// layout, and each repeats exactly (BENCHMARKS.md, 'Determinism of a guest').
pub fn rtc_base_of_draw(draw: u32) -> String {
    if draw == 0 {
        return RTC_FIXED_BASE.into();
    }
    format!(
        "{RTC_FIXED_BASE}T{:02}:{:02}:{:02}",
        draw / 3600,
        draw / 60 % 60,
        draw % 60
    )
}

/// QEMU's -rtc for layout draw `draw`.
pub fn rtc_of_draw(draw: u32) -> String {
    format!("clock=vm,base={}", rtc_base_of_draw(draw))
}

/// The layout draw an `-rtc` base names, if it is one of lsmpmon's.
pub fn draw_of_rtc_base(base: &str) -> Option<u32> {
    if base == RTC_FIXED_BASE {
        return Some(0);
    }
    let time = base.strip_prefix(RTC_FIXED_BASE)?.strip_prefix('T')?;
    let parts: Vec<u32> = time
        .split(':')
        .map(|p| (p.len() == 2).then(|| p.parse().ok()).flatten())
        .collect::<Option<_>>()?;
    let [h, m, s] = parts[..] else { return None };
    let draw = h * 3600 + m * 60 + s;
    (m < 60 && s < 60 && (1..=MAX_DRAWS).contains(&draw)).then_some(draw)
}

/// The layout draw of a recorded `-rtc` (`clock=vm,base=…`), if any.
pub fn draw_of_rtc(rtc: &str) -> Option<u32> {
    rtc.split(',')
        .find_map(|p| p.strip_prefix("base="))
        .and_then(draw_of_rtc_base)
}

/// A recorded `-rtc` with a draw's base as draw 0's: how the guest's clock
/// ran, whichever draw it started from (draws of one cell are measured alike).
pub fn rtc_without_draw(rtc: &str) -> String {
    rtc.split(',')
        .map(
            |p| match p.strip_prefix("base=").and_then(draw_of_rtc_base) {
                Some(_) => format!("base={RTC_FIXED_BASE}"),
                None => p.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_draw_has_its_own_base_and_reads_back() {
        assert_eq!(rtc_of_draw(0), "clock=vm,base=2000-01-01");
        assert_eq!(rtc_base_of_draw(61), "2000-01-01T00:01:01");
        for d in 0..=MAX_DRAWS {
            assert_eq!(draw_of_rtc(&rtc_of_draw(d)), Some(d), "{d}");
        }
        assert_eq!(
            rtc_without_draw("clock=vm,base=2000-01-01T00:00:07,driftfix=slew"),
            "clock=vm,base=2000-01-01,driftfix=slew"
        );
        assert_eq!(rtc_without_draw("clock=host"), "clock=host");
        for bad in [
            "2000-01-01T00:00:00",
            "2000-01-01T00:01:60",
            "2000-01-01T01:00:00",
            "2000-01-02",
            "2000-01-01T0:0:1",
            "utc",
        ] {
            assert_eq!(draw_of_rtc_base(bad), None, "{bad}");
        }
    }
}
