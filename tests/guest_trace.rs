//! `lsmpmon trace` in real Debian kernels booted by `lsmpmon vm run`.
mod common;
use common::*;

/// Known workloads give exact hook counts; attribution, filters, the JSON
/// schema and the probe floor hold.
fn counts_filters_and_schema(series: &str, method: &str) {
    // "refused-multi": the kernel refuses the multi-link (a planted duplicate
    // BTF id); lsmpmon falls back to one session program per hook.
    let (env, arg) = match method {
        "refused-multi" => ("LSMPMON_TEST_REFUSE_MULTI=1 ", "auto"),
        m => ("", m),
    };
    let script = "mkdir -p /tmp/d && echo x > /tmp/d/file && \
        ENV lsmpmon trace --json --comm workload --method METHOD -- sh -c '\
          workload create 200 /tmp/d && workload stat 300 /tmp/d/f0 && \
          workload open_close 100 /tmp/d/file && workload prctl 40 /tmp/d && \
          workload landlock_open 25 /tmp/d/file && touch /tmp/other'"
        .replace("ENV ", env)
        .replace("METHOD", arg);
    let text = guest_stdout(series, &script);
    validate("trace.schema.json", &text);
    let r = json(&text);

    assert_eq!(r["provenance"]["environment"], "guest");
    assert_eq!(r["provenance"]["time"], "virtual");
    // What the guest booted: the packages the host fetched, with their sha256.
    let k = &r["provenance"]["kernel"];
    assert_eq!(k["series"], series);
    let release = r["provenance"]["kernel_release"].as_str().unwrap();
    assert_eq!(k["release"], release);
    let packages = k["packages"].as_array().unwrap();
    assert!(!packages.is_empty(), "{k}");
    for p in packages {
        assert!(p["name"].as_str().unwrap().contains(release), "{p}");
        assert_eq!(p["sha256"].as_str().unwrap().len(), 64, "{p}");
    }
    assert!(r["probe"]["hooks_attached"].as_u64().unwrap() > 200);
    // Debian's 6.x kernels preempt voluntarily; 7.x only fully or lazily.
    let preemption = &r["probe"]["preemption"];
    if series.starts_with("7.") {
        assert!(
            preemption.as_str().unwrap().starts_with("lazy: "),
            "{preemption}"
        );
    } else {
        assert!(preemption.is_null(), "{preemption}");
    }
    // The method: one session multi-link where the kernel has it (7.x), else
    // one kprobe session link where the kernel has fprobe (6.12; Debian's
    // 6.1 is built without it), unless another is asked for or the kernel
    // refuses the link; what was passed over, and why, in order.
    let used = r["probe"]["method"].as_str().unwrap();
    let not_used: Vec<&str> = r["probe"]["not_used"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["method"].as_str().unwrap())
        .collect();
    match (series.starts_with("7."), method) {
        (true, "auto") => {
            assert_eq!(used, "multi session");
            assert!(not_used.is_empty(), "{not_used:?}");
            // A trace without a long --duration: auto weighed attach time, and says so.
            let why = r["probe"]["method_why"].as_str().unwrap();
            assert!(why.contains("attach time"), "{why}");
        }
        (true, "refused-multi") => {
            assert_eq!(used, "session");
            assert_eq!(not_used, ["multi session"]);
            let why = r["probe"]["not_used"][0]["reason"].as_str().unwrap();
            assert!(
                why.contains("refused the multi-link") && why.contains("Invalid argument"),
                "{why}"
            );
        }
        (false, "auto") if series != "6.1" => {
            assert_eq!(used, "kprobe session");
            assert_eq!(not_used, ["multi session"]);
            let why = r["probe"]["method_why"].as_str().unwrap();
            assert!(why.contains("attach time"), "{why}");
        }
        (false, "kprobe-multi") => {
            assert_eq!(used, "kprobe multi");
            assert_eq!(not_used, ["multi session", "kprobe session"]);
            // One link per side, every hook at once.
            let attach_ms = r["probe"]["attach_ms"].as_f64().unwrap();
            assert!(attach_ms < 2000.0, "attach {attach_ms} ms");
        }
        (false, "kprobe") => {
            // Asked for by name on a kernel that has fentry/fexit: every
            // other method passed over as not asked for, no fallback note.
            assert_eq!(used, "kprobe/kretprobe");
            assert_eq!(
                not_used,
                [
                    "multi session",
                    "kprobe session",
                    "kprobe multi",
                    "session",
                    "fentry/fexit"
                ]
            );
            assert!(
                r["probe"]["fallback"].is_null(),
                "{}",
                r["probe"]["fallback"]
            );
            let reason = r["probe"]["not_used"][4]["reason"].as_str().unwrap();
            assert!(reason.contains("--method kprobe"), "{reason}");
        }
        _ => {
            assert_eq!(used, "fentry/fexit");
            assert_eq!(
                not_used,
                ["multi session", "kprobe session", "kprobe multi", "session"]
            );
            let why = r["probe"]["not_used"][2]["reason"].as_str().unwrap();
            if series == "6.1" {
                assert!(why.contains("CONFIG_FPROBE"), "{why}");
            }
        }
    }
    assert_eq!(
        r["probe"]["failed"].as_array().unwrap().len(),
        0,
        "{}",
        r["probe"]["failed"]
    );
    let floor = r["probe"]["floor_ns"]
        .as_f64()
        .expect("probe floor measured");
    assert!((20.0..2000.0).contains(&floor), "floor {floor}");

    // N creations -> N inode_create and N path_mknod; the touch by another
    // process (comm "touch"/"sh") is filtered out by --comm.
    assert_eq!(calls(&r, "inode_create"), 200);
    assert_eq!(calls(&r, "path_mknod"), 200);
    // N stats -> N inode_getattr, none switched out; the only other ones are
    // stdio's fstat of stdout, one per workload process.
    let getattr = hook(&r, "inode_getattr");
    assert_eq!(getattr["calls"], 304);
    assert_eq!(getattr["cs_count"], 0);
    assert!(getattr["min_ns"].as_u64().unwrap() > 0);
    assert!(getattr["ave_ns"].as_f64().unwrap() >= getattr["min_ns"].as_f64().unwrap());
    // Figures are net of the floor only with --subtract-floor.
    let subtracted = match r["options"]["subtract_floor"].as_bool().unwrap() {
        true => floor,
        false => 0.0,
    };
    for name in ["inode_getattr", "inode_create", "file_open"] {
        histogram_agrees_with_exact_figures(hook(&r, name), subtracted);
    }
    // glibc issues both stat() and fstat() as newfstatat.
    assert_eq!(syscall_hook_count(&r, "newfstatat", "inode_getattr"), 304);
    // The final fput runs on return from close(): file_free_security counts under close.
    assert!(
        syscall_hook_count(&r, "close", "file_free_security") >= 300,
        "file_free_security under close: {}",
        syscall_hook_count(&r, "close", "file_free_security")
    );
    // Returns are classified: prctl options no LSM handles give -ENOSYS,
    // which is not a denial (task_prctl's return is not an access decision) ...
    // (40, and landlock_open's PR_SET_NO_NEW_PRIVS.)
    let prctl = hook(&r, "task_prctl");
    assert_eq!(prctl["calls"], 41);
    assert_eq!(
        (prctl["deny"].as_u64(), prctl["allow"].as_u64()),
        (None, None)
    );
    assert_eq!(prctl["error"], 41, "{prctl}");
    assert!(prctl["not_a_decision"].as_str().unwrap().contains("ENOSYS"));
    // ... while each open Landlock refuses is one -EACCES from file_open.
    let open = hook(&r, "file_open");
    assert_eq!(
        (open["deny"].as_u64(), open["error"].as_u64()),
        (Some(25), Some(0)),
        "{open}"
    );
    assert_eq!(
        open["allow"].as_u64().unwrap() + 25,
        open["calls"].as_u64().unwrap()
    );
    assert_eq!(hook(&r, "inode_getattr")["deny"], 0);
    // Every call is accounted for, and every timed call under one syscall.
    for h in r["hooks"].as_array().unwrap() {
        let name = h["hook"].as_str().unwrap();
        let per_syscall: u64 = r["syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["hooks"].as_array().unwrap().iter())
            .filter(|x| x["hook"] == name)
            .map(|x| x["count"].as_u64().unwrap())
            .sum();
        assert_eq!(
            per_syscall,
            h["count"].as_u64().unwrap(),
            "per-syscall counts of {name}"
        );
        // The workload's own hooks run in its process context: none is lost.
        // Others may also run from interrupts (inode_free_security from an
        // RCU callback): one that interrupts its own probe on that CPU is
        // skipped by the kernel and counted as dropped (seen: 2 of a run on
        // 7.3), never silently lost and never most of the calls.
        let dropped = h["dropped"].as_u64().unwrap();
        if ["inode_create", "inode_getattr", "file_open", "task_prctl"].contains(&name) {
            assert_eq!(dropped, 0, "{name}");
        } else {
            assert!(
                dropped <= h["count"].as_u64().unwrap(),
                "{name}: {dropped} dropped"
            );
        }
    }
}

/// --object keeps only calls on that name; ctl disable/enable/reset/dump act
/// on a running trace.
fn object_filter_and_ctl(series: &str) {
    let script = r#"
set -e
mkdir -p /tmp/o && : > /tmp/o/target && : > /tmp/o/other
lsmpmon trace --hooks 'inode_getattr,file_open' --object target --json -o /tmp/final.json 2>/tmp/trace.err &
T=$!
while [ ! -S /run/lsmpmon/trace-$T.sock ]; do sleep 0.2; done
workload stat 10 /tmp/o/target >/dev/null
workload stat 7 /tmp/o/other >/dev/null
workload open_close 4 /tmp/o/target >/dev/null
echo "A $(lsmpmon trace ctl dump --json)"
lsmpmon trace ctl disable >/dev/null
workload stat 5 /tmp/o/target >/dev/null
echo "B $(lsmpmon trace ctl dump --json)"
lsmpmon trace ctl enable >/dev/null
lsmpmon trace ctl reset >/dev/null
workload stat 3 /tmp/o/target >/dev/null
echo "C $(lsmpmon trace ctl dump --json)"
kill -INT $T
wait $T
echo "F $(cat /tmp/final.json | tr -d '\n')"
# The object in a later argument (inode_unlink: the dentry, argument 1), next
# to a hook whose object is argument 0: each call must read its own hook's.
lsmpmon trace --hooks 'inode_getattr,inode_unlink' --object victim --json -o /tmp/u.json -- \
  sh -c ': > /tmp/o/victim; : > /tmp/o/bystander; rm /tmp/o/bystander /tmp/o/victim' 2>/dev/null
echo "U $(tr -d '\n' < /tmp/u.json)"
"#;
    let text = guest_stdout(series, script);
    let part = |tag: &str| tagged(&text, tag);
    let (a, b, c, f) = (part("A"), part("B"), part("C"), part("F"));
    assert_eq!(
        calls(&a, "inode_getattr"),
        10,
        "only stats of 'target' count"
    );
    assert_eq!(calls(&a, "file_open"), 4);
    assert_eq!(calls(&b, "inode_getattr"), 10, "disabled: nothing recorded");
    assert_eq!(calls(&c, "inode_getattr"), 3, "reset, then 3 more");
    // A reset keeps the probe floor and gives averages of the new calls only.
    assert_eq!(c["probe"]["floor_ns"], a["probe"]["floor_ns"]);
    assert!(c["probe"]["floor_ns"].as_f64().is_some());
    let g = hook(&c, "inode_getattr");
    let (min, ave, max) = (
        g["min_ns"].as_f64().unwrap(),
        g["ave_ns"].as_f64().unwrap(),
        g["max_ns"].as_f64().unwrap(),
    );
    assert!(min > 0.0 && min <= ave && ave <= max, "{g}");
    assert_eq!(calls(&f, "inode_getattr"), 3);
    assert_eq!(f["options"]["object"], "target");
    validate("trace.schema.json", &serde_json::to_string(&f).unwrap());
    let u = part("U");
    assert_eq!(calls(&u, "inode_unlink"), 1, "only the victim's unlink");
}

/// A fanotify FAN_OPEN_PERM listener that answers slowly blocks each open
/// inside security_file_open (6.1): those calls land in cs_count, untimed.
/// An open already blocked there when tracing starts is not counted at all.
fn context_switch_lands_in_cs_count(series: &str) {
    let script = r#"
: > /tmp/watched
lsmpmon trace --json --hooks file_open --comm workload -- \
  workload fanotify_slow 20 /tmp/watched 2 > /tmp/a.json
echo "A $(tr -d '\n' < /tmp/a.json)"
# Two opens answered after 4 s each: the first is in flight when tracing starts.
workload fanotify_slow 2 /tmp/watched 4000 > /dev/null &
W=$!
sleep 1
lsmpmon trace --json --hooks file_open --comm workload -o /tmp/b.json -- \
  sh -c "while kill -0 $W 2>/dev/null; do sleep 0.1; done" 2>/dev/null
echo "B $(tr -d '\n' < /tmp/b.json)"
"#;
    let text = guest_stdout(series, script);
    let h = hook(&tagged(&text, "A"), "file_open").clone();
    let cs = h["cs_count"].as_u64().unwrap();
    // The child's 20 blocked opens; the listener's own opens of the event
    // files do not block.
    assert_eq!(cs, 20, "{h}");
    assert_eq!(h["calls"].as_u64().unwrap(), 40, "{h}");
    let b = tagged(&text, "B");
    let h = hook(&b, "file_open");
    // The second open (blocked, cs_count) and the listener's event file for
    // it (timed); the first open's exit is not counted.
    assert_eq!(
        (h["cs_count"].as_u64(), h["count"].as_u64()),
        (Some(1), Some(1)),
        "{h}"
    );
}

/// The probes' histogram (as the kernel bucketed each call) against the
/// exact figures of the same calls: its buckets 1/16 of an octave wide at
/// most, holding every timed call, the fastest and slowest call in its first
/// and last; its mean within 3.2 % of the exact mean. Buckets are of the raw
/// delta, figures net of `floor`.
fn histogram_agrees_with_exact_figures(h: &serde_json::Value, floor: f64) {
    let f = |k: &str| h[k].as_f64().unwrap();
    let hist: Vec<(f64, f64, f64)> = h["hist"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["low_ns"].as_f64().unwrap(),
                b["high_ns"].as_f64().unwrap(),
                b["count"].as_f64().unwrap(),
            )
        })
        .collect();
    assert!(!hist.is_empty(), "{h}");
    for w in hist.windows(2) {
        assert!(w[0].1 <= w[1].0, "sorted, apart: {h}");
    }
    for (low, high, _) in &hist {
        assert!((high - low) * 16.0 <= low.max(16.0), "width {low}..{high}");
    }
    let count: f64 = hist.iter().map(|b| b.2).sum();
    assert_eq!(count, f("count"), "{h}");
    let (min, max) = (f("min_ns") + floor, f("max_ns") + floor);
    let (first, last) = (hist[0], hist[hist.len() - 1]);
    assert!(
        first.0 <= min + 1.0 && min - 1.0 < first.1,
        "min {min} not in {first:?}"
    );
    assert!(
        last.0 <= max + 1.0 && max - 1.0 < last.1,
        "max {max} not in {last:?}"
    );
    let mean = hist
        .iter()
        .map(|(l, hi, c)| (l + hi) / 2.0 * c)
        .sum::<f64>()
        / count;
    let exact = f("ave_ns") + floor;
    assert!(
        (mean - exact).abs() <= 0.032 * exact,
        "bucket mean {mean} vs exact {exact}: {h}"
    );
}

#[test]
fn trace_6_1_counts_filters_and_schema() {
    counts_filters_and_schema("6.1", "auto");
}

/// The kprobe/kretprobe probes asked for by name on 6.1 (attach 3 s and
/// release 10.5 s instead of fentry/fexit's 5.3 and 33: BENCHMARKS.md, 'Attach and release')
/// count and classify exactly as fentry/fexit do.
#[test]
fn trace_6_1_kprobe_counts_filters_and_schema() {
    counts_filters_and_schema("6.1", "kprobe");
}

/// 6.12: one kprobe session link for every hook (the default there for a
/// short trace), or a kprobe.multi link pair, gives the same counts as
/// fentry/fexit.
#[test]
fn trace_6_12_counts_filters_and_schema() {
    counts_filters_and_schema("6.12", "auto");
}

#[test]
fn trace_6_12_kprobe_multi_counts_filters_and_schema() {
    counts_filters_and_schema("6.12", "kprobe-multi");
}

#[test]
fn trace_6_12_fentry_fexit_counts_filters_and_schema() {
    counts_filters_and_schema("6.12", "fentry-fexit");
}

/// `auto` weighs what the trace is for: a short one takes the kprobe session
/// link (fast attach and release), one of --duration 120 s or more
/// fentry/fexit (cheaper per call), as does `--weigh per-call`; each says why. Releasing every hook's
/// kprobe session probe takes one grace period, not one per hook.
#[test]
fn trace_6_12_auto_weighs_attach_time_or_cost_per_call() {
    let script = r#"
lsmpmon trace --json --detach wait -o /tmp/s.json -- true 2>/dev/null
echo "S $(tr -d '\n' < /tmp/s.json)"
lsmpmon trace --json --hooks 'inode_*' --duration 120 -o /tmp/l.json -- true 2>/dev/null
echo "L $(tr -d '\n' < /tmp/l.json)"
lsmpmon trace --json --hooks 'inode_*' --weigh per-call -o /tmp/w.json -- true 2>/dev/null
echo "W $(tr -d '\n' < /tmp/w.json)"
"#;
    let text = guest_stdout("6.12", script);
    let (short, long) = (tagged(&text, "S"), tagged(&text, "L"));
    assert_eq!(short["probe"]["method"], "kprobe session");
    let why = short["probe"]["method_why"].as_str().unwrap();
    assert!(why.contains("attach time"), "{why}");
    let p = &short["probe"];
    let (attach_ms, detach_ms) = (
        p["attach_ms"].as_f64().unwrap(),
        p["detach_ms"].as_f64().unwrap(),
    );
    assert!(attach_ms < 2000.0 && detach_ms < 2000.0, "{p}");
    assert_eq!(long["probe"]["method"], "fentry/fexit");
    let why = long["probe"]["method_why"].as_str().unwrap();
    assert!(
        why.contains("cost per call (--duration of 120 s or more)"),
        "{why}"
    );
    let reasons: Vec<&str> = long["probe"]["not_used"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["reason"].as_str().unwrap())
        .collect();
    assert!(reasons[1].contains("cost per call"), "{reasons:?}");
    // --weigh per-call (the lab's cells) without a --duration: the same choice.
    let weighed = tagged(&text, "W");
    assert_eq!(weighed["probe"]["method"], "fentry/fexit");
    let why = weighed["probe"]["method_why"].as_str().unwrap();
    assert!(why.contains("cost per call (--weigh per-call)"), "{why}");
}

/// 7.3 (trixie-backports, the 7.x package layout) preempts lazily: the
/// probes disable preemption there, and say so; the counts are exact with
/// session programs (the default there) and with fentry/fexit.
#[test]
fn trace_7_3_counts_filters_and_schema() {
    counts_filters_and_schema("7.3", "auto");
}

/// Where the kernel refuses the multi-link, one session program per hook
/// gives the same counts.
#[test]
fn trace_7_3_refused_multi_link_counts_filters_and_schema() {
    counts_filters_and_schema("7.3", "refused-multi");
}

#[test]
fn trace_7_3_fentry_fexit_counts_filters_and_schema() {
    counts_filters_and_schema("7.3", "fentry-fexit");
}

/// 7.x no longer raises fanotify's permission events inside
/// security_file_open; its kernels preempt in kernel mode (lazy), so a
/// SCHED_FIFO task that wakes every 100 us and spins 200 us forces the
/// switches instead: the stats it preempts inside inode_getattr land in
/// cs_count, untimed (no timed call lasts a spin), with every method.
#[test]
fn trace_7_3_preemption_in_hook_lands_in_cs_count() {
    let script = r#"
: > /tmp/x
for m in multi-session session fentry-fexit; do
  lsmpmon trace --json --hooks inode_getattr --comm workload --method $m -o /tmp/r.json -- \
    workload rt_preempt 300 /tmp/x 200 > /tmp/w.json
  echo "W $(cat /tmp/w.json)"
  echo "R $(tr -d '\n' < /tmp/r.json)"
done
"#;
    let text = guest_stdout("7.3", script);
    let works: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("W "))
        .map(json)
        .collect();
    let results: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("R "))
        .map(json)
        .collect();
    assert_eq!((works.len(), results.len()), (3, 3), "{text}");
    let methods = ["multi session", "session", "fentry/fexit"];
    for ((w, r), method) in works.iter().zip(&results).zip(methods) {
        assert_eq!(r["probe"]["method"], method);
        let h = hook(r, "inode_getattr");
        let stats = w["n"].as_u64().unwrap();
        // Every stat, and stdio's one fstat of stdout.
        assert_eq!(h["calls"].as_u64().unwrap(), stats + 1, "{method}: {h}");
        assert_eq!(
            h["count"].as_u64().unwrap() + h["cs_count"].as_u64().unwrap(),
            stats + 1
        );
        assert!(h["cs_count"].as_u64().unwrap() >= 1, "{method}: {h}");
        assert!(h["max_ns"].as_u64().unwrap() < 100_000, "{method}: {h}");
    }
}

#[test]
fn trace_7_3_object_filter_and_ctl() {
    object_filter_and_ctl("7.3");
}

#[test]
fn trace_6_1_object_filter_and_ctl() {
    object_filter_and_ctl("6.1");
}

#[test]
fn trace_6_12_object_filter_and_ctl() {
    object_filter_and_ctl("6.12");
}

#[test]
fn trace_6_1_context_switch_in_hook() {
    context_switch_lands_in_cs_count("6.1");
}

#[test]
fn done_when_example_counts_200_creations() {
    let out = std::process::Command::new(LSMPMON)
        .args([
            "vm",
            "run",
            "--kernel",
            "6.1",
            "--",
            "lsmpmon",
            "trace",
            "--json",
            "--",
            "sh",
            "-c",
            "for i in $(seq 200); do touch /tmp/f$i; done",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let r = json(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(calls(&r, "inode_create"), 200);
}

/// Debian 5.10 has no bpf_get_func_ret(): the kprobe/kretprobe fallback runs
/// the same logic, counts the same, and says so in the result.
#[test]
fn trace_5_10_kprobe_fallback_is_flagged() {
    let script = "mkdir -p /tmp/d && lsmpmon trace --json --comm workload -- \
        sh -c 'workload create 50 /tmp/d && workload stat 60 /tmp/d/f0'";
    let out = guest("5.10", &[], script);
    assert!(out.status.success(), "guest run failed: {:?}", out.status);
    let text = String::from_utf8(out.stdout).unwrap();
    validate("trace.schema.json", &text);
    let r = json(&text);
    assert_eq!(r["probe"]["method"], "kprobe/kretprobe");
    assert!(r["probe"]["fallback"].as_str().unwrap().contains("5.17"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("falling back to kprobe/kretprobe"));
    assert_eq!(calls(&r, "inode_create"), 50);
    assert_eq!(calls(&r, "inode_getattr"), 62);
    assert_eq!(syscall_hook_count(&r, "newfstatat", "inode_getattr"), 62);
}

/// On 5.10 a kretprobe holds one instance per call in progress. With the
/// kernel's default (one per CPU) a task's return from security_file_open was
/// lost while another task slept in it (a fanotify permission answer): two
/// such tasks at once lost 15 of 20 calls, uncounted. lsmpmon sets maxactive,
/// counts every call, reads the kernel's lost count into `dropped`, and
/// removes its kprobe events afterwards.
#[test]
fn trace_5_10_concurrent_sleepers_lose_no_return() {
    let script = r#"
: > /tmp/a; : > /tmp/b
lsmpmon trace --json --hooks file_open --comm workload -o /tmp/r.json --   sh -c 'workload fanotify_slow 5 /tmp/a 300 & workload fanotify_slow 5 /tmp/b 300 & wait' > /dev/null
echo "R $(tr -d '
' < /tmp/r.json)"
i=0; while grep -q lsmpmon_ /sys/kernel/tracing/kprobe_events && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
echo "LEFT $(grep -c lsmpmon_ /sys/kernel/tracing/kprobe_events)"
# A SIGKILLed trace leaves its events; the next trace removes them.
lsmpmon trace --hooks file_open -- sleep 60 > /dev/null 2>&1 &
P=$!
i=0; until grep -q lsmpmon_ /sys/kernel/tracing/kprobe_events || [ $i -ge 300 ]; do sleep 0.1; i=$((i+1)); done
sleep 1; kill -9 $P; wait $P
echo "KILLED $(grep -c lsmpmon_$P /sys/kernel/tracing/kprobe_events)"
lsmpmon trace --hooks file_open --detach wait -- true > /dev/null 2>&1
echo "STALE $(grep -c lsmpmon_ /sys/kernel/tracing/kprobe_events)"
"#;
    let text = guest_stdout("5.10", script);
    let r = tagged(&text, "R");
    validate("trace.schema.json", &r.to_string());
    let h = hook(&r, "file_open");
    // Per workload: 5 blocked opens (cs_count) and 5 event files its listener opens.
    assert_eq!(
        (
            h["cs_count"].as_u64(),
            h["count"].as_u64(),
            h["dropped"].as_u64()
        ),
        (Some(10), Some(10), Some(0)),
        "{h}"
    );
    assert!(r["probe"]["kretprobe_maxactive"].as_u64().unwrap() >= 64);
    assert_eq!(r["probe"]["kretprobe_missed"], 0);
    for (tag, want) in [("LEFT", 0), ("KILLED", 2), ("STALE", 0)] {
        assert!(
            text.lines().any(|l| l == format!("{tag} {want}")),
            "kprobe events: {tag} should be {want}: {text}"
        );
    }
}

/// --per-lsm finds each active LSM's own function for a hook in the kernel's
/// hook tables (lists on 6.1, static calls on 6.12); each runs once per call.
fn per_lsm_maps_modules(series: &str) {
    let script = ": > /tmp/x && lsmpmon trace --json --per-lsm --hooks 'file_open,inode_getattr' \
        --comm workload -- workload open_close 30 /tmp/x";
    let text = guest_stdout(series, script);
    validate("trace.schema.json", &text);
    let r = json(&text);
    let opens = calls(&r, "file_open");
    assert_eq!(opens, 30);
    let impls: Vec<(&str, &str, u64)> = r["per_lsm"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["hook"] == "file_open")
        .map(|x| {
            (
                x["lsm"].as_str().unwrap(),
                x["function"].as_str().unwrap(),
                x["calls"].as_u64().unwrap(),
            )
        })
        .collect();
    // Debian's default LSM order has AppArmor and TOMOYO, both with file_open.
    for (lsm, function) in [
        ("apparmor", "apparmor_file_open"),
        ("tomoyo", "tomoyo_file_open"),
    ] {
        assert!(
            impls.contains(&(lsm, function, opens)),
            "{lsm} missing or miscounted in {impls:?}"
        );
    }
    // The inventory (LSMPMON Table 2) is every hook a module implements,
    // not the two asked for.
    let implemented = |lsm: &str| -> Vec<String> {
        r["probe"]["implemented"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["lsm"] == lsm)
            .unwrap_or_else(|| panic!("{lsm} not in the inventory"))["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap().to_string())
            .collect()
    };
    let apparmor = implemented("apparmor");
    assert!(apparmor.len() > 50, "AppArmor implements {apparmor:?}");
    for h in [
        "cred_prepare",
        "file_open",
        "file_permission",
        "socket_sendmsg",
    ] {
        assert!(
            apparmor.iter().any(|x| x == h),
            "AppArmor's {h} in {apparmor:?}"
        );
    }
    assert!(implemented("tomoyo").iter().any(|x| x == "file_open"));
    // Each module's own entries, not the hook list: AppArmor names files by
    // path, so it has no inode_create, and the BPF LSM has a stub on every hook.
    assert!(
        !apparmor.iter().any(|x| x == "inode_create"),
        "{apparmor:?}"
    );
    let bpf = implemented("bpf");
    assert!(
        bpf.len() > 2 * apparmor.len(),
        "bpf {} apparmor {}",
        bpf.len(),
        apparmor.len()
    );
    // Each module function's probe pair ran inside security_file_open: the
    // hook counts them and its time is net of their calibrated cost, so the
    // hook is its modules plus a little dispatch, not plus ~500 ns a module.
    let hook_open = hook(&r, "file_open");
    let module_calls: u64 = impls.iter().map(|i| i.2).sum();
    // A hook call switched out (cs_count) is not timed, and its nested
    // probes are not counted: one per module it ran.
    let switched = hook_open["cs_count"].as_u64().unwrap() * impls.len() as u64;
    assert_eq!(
        hook_open["nested_probes"].as_u64().unwrap() + switched,
        module_calls,
        "{hook_open}"
    );
    let pair = r["probe"]["pair_cost_ns"]
        .as_f64()
        .expect("pair cost measured");
    let floor = r["probe"]["floor_ns"].as_f64().unwrap();
    assert!(
        pair > floor,
        "a pair costs its caller more than its floor: {pair} vs {floor}"
    );
    let modules_ns: f64 = r["per_lsm"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["hook"] == "file_open")
        .map(|x| x["ave_ns"].as_f64().unwrap() - floor)
        .sum();
    let own_ns = hook_open["ave_ns"].as_f64().unwrap() - floor - modules_ns;
    // 30 calls on a guest whose layout moves with its boot (BENCHMARKS.md,
    // 'What a layout draw moves'):
    // 7.3 gave 423 ns in one CI run (hook 909, modules 278) and under 400 in
    // the others. A bound on the hook's own cost; each module's row is
    // checked above.
    assert!(
        (-50.0..500.0).contains(&own_ns),
        "file_open less its modules: {own_ns:.0} ns (hook {}, modules {modules_ns:.0})",
        hook_open["ave_ns"]
    );
}

/// A probe the kernel skips (it does on recursion) costs only its own call:
/// AppArmor's file_open loses its exit (its frames are left above the
/// hook's), then its entry (exits with no frame). The hook that contains it
/// still counts every call, with a sane time, and nothing is dropped.
#[test]
fn trace_6_1_skipped_probes_cost_only_their_call() {
    let script = r#"
: > /tmp/x
T="lsmpmon trace --json --per-lsm --hooks file_open --comm workload"
LSMPMON_TEST_SKIP_PROBE=exit:apparmor_file_open $T -o /tmp/a.json -- workload open_close 30 /tmp/x
echo "A $(tr -d '
' < /tmp/a.json)"
LSMPMON_TEST_SKIP_PROBE=entry:apparmor_file_open $T -o /tmp/b.json -- workload open_close 30 /tmp/x
echo "B $(tr -d '
' < /tmp/b.json)"
"#;
    let text = guest_stdout("6.1", script);
    for tag in ["A", "B"] {
        let r = tagged(&text, tag);
        let h = hook(&r, "file_open");
        assert_eq!(
            (
                h["count"].as_u64(),
                h["cs_count"].as_u64(),
                h["dropped"].as_u64()
            ),
            (Some(30), Some(0), Some(0)),
            "{tag}: {h}"
        );
        // A stale frame's start taken for the hook's would be ~0 or wrap to ~1.8e19.
        let max = h["max_ns"].as_u64().unwrap();
        assert!((500..100_000).contains(&max), "{tag}: max {max}");
        let module = |f: &str| lsm_function(&r, f);
        // The unbroken module is exact; the broken one counts nothing.
        assert_eq!(module("tomoyo_file_open")["calls"], 30, "{tag}");
        assert_eq!(module("apparmor_file_open")["calls"], 0, "{tag}");
        assert_eq!(module("apparmor_file_open")["dropped"], 0, "{tag}");
    }
}

/// The eight hooks whose callers are not named `security_<hook>`, found in
/// the kernel's own text (6.1: the functions naming the hook's list head;
/// 7.3: its static-call sites), each driven and counted; booted with
/// SELinux, each module function of them (`--per-lsm`) counted too.
fn hooks_named_otherwise(series: &str, method: &str) {
    const EIGHT: [&str; 8] = [
        "cred_prepare",
        "cred_transfer",
        "vm_enough_memory",
        "socket_sock_rcv_skb",
        "sk_getsecid",
        "settime",
        "userns_create",
        "sb_free_mnt_opts",
    ];
    // SELinux parses context= (no policy loaded: the mount is refused) and
    // frees its options through sb_free_mnt_opts.
    let script = format!(
        "mkdir -p /tmp/m && lsmpmon trace --json --per-lsm --hooks '{}' -- sh -c '\
          workload fork_exec 10 /bin/true && workload session_keyring 5 x && \
          workload udp 20 x && workload userns 5 x && workload settime 5 x && \
          workload mount 5 /tmp/m && workload mmap 10 x && \
          {{ mount -t tmpfs -o context=system_u:object_r:tmp_t:s0 none /tmp/m 2>/dev/null; true; }}'",
        EIGHT.join(",")
    );
    let out = guest(series, &["--lsm", "selinux"], &script);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "guest run failed: {text}");
    validate("trace.schema.json", &text);
    let r = json(&text);
    assert_eq!(
        r["probe"]["hook_source"]["method"], method,
        "{}",
        r["probe"]
    );
    let excluded = r["probe"]["excluded"].to_string();
    for h in EIGHT {
        assert!(!excluded.contains(&format!("\"{h}\"")), "{h}: {excluded}");
    }
    // At least what the workloads did (fork and exec each prepare creds;
    // other processes add their own).
    for (h, at_least) in [
        ("cred_prepare", 20),
        ("cred_transfer", 5),
        ("vm_enough_memory", 10),
        ("socket_sock_rcv_skb", 20),
        ("sk_getsecid", 20),
        ("settime", 5),
        ("userns_create", 5),
        ("sb_free_mnt_opts", 6),
    ] {
        let n = calls(&r, h);
        assert!(n >= at_least, "{h}: {n} calls, at least {at_least} made");
    }
    // One keyring handed over per child: nothing else transfers creds.
    assert_eq!(calls(&r, "cred_transfer"), 5);
    assert_eq!(hook(&r, "settime")["function"], "security_settime64");
    // Each module's function of the eight, as the kernel's table lists them.
    let implemented = r["probe"]["implemented"].as_array().unwrap();
    let mut checked = Vec::new();
    for m in implemented {
        for h in m["hooks"].as_array().unwrap() {
            let h = h.as_str().unwrap();
            if !EIGHT.contains(&h) {
                continue;
            }
            let lsm = m["lsm"].as_str().unwrap();
            let row = r["per_lsm"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["lsm"] == lsm && x["hook"] == h)
                .unwrap_or_else(|| panic!("{lsm}'s {h} not traced: {}", r["probe"]["unmapped"]));
            // security_free_mnt_opts calls the modules only for options
            // one parsed, and SELinux parses none (context= is refused)
            // before a policy is loaded: its function is traced, not called.
            if h != "sb_free_mnt_opts" {
                assert!(row["calls"].as_u64().unwrap() > 0, "{lsm} {h}: {row}");
            }
            checked.push(row["function"].as_str().unwrap().to_string());
        }
    }
    for f in [
        "selinux_cred_prepare",
        "selinux_cred_transfer",
        "selinux_socket_sock_rcv_skb",
        "selinux_sk_getsecid",
        "selinux_userns_create",
        "selinux_free_mnt_opts",
        "cap_vm_enough_memory",
        "cap_settime",
    ] {
        assert!(checked.iter().any(|c| c == f), "{f} not in {checked:?}");
    }
}

#[test]
fn trace_6_1_hooks_named_otherwise() {
    hooks_named_otherwise("6.1", "hook_lists");
}

#[test]
fn trace_7_3_hooks_named_otherwise() {
    hooks_named_otherwise("7.3", "static_calls");
}

#[test]
fn trace_6_1_per_lsm() {
    per_lsm_maps_modules("6.1");
}

/// Session programs nest too: each module function's session inside
/// security_file_open is counted and its cost taken out.
#[test]
fn trace_7_3_per_lsm() {
    per_lsm_maps_modules("7.3");
}

#[test]
fn trace_6_12_per_lsm() {
    per_lsm_maps_modules("6.12");
}

/// On 6.12 TOMOYO's one function implements two hooks (file_ioctl and
/// file_ioctl_compat): it gets one probe, reported under both. Two probes on
/// one function saw each other's frames and put every call in cs_count.
#[test]
fn trace_6_12_per_lsm_shared_function_one_probe() {
    let script = "lsmpmon trace --json --per-lsm --hooks 'file_ioctl,file_ioctl_compat' \
        --comm stty -- sh -c 'for i in $(seq 20); do stty -F /dev/null 2>/dev/null; done; true'";
    let r = json(&guest_stdout("6.12", script));
    let rows: Vec<&serde_json::Value> = r["per_lsm"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["function"] == "tomoyo_file_ioctl")
        .collect();
    let mut hooks: Vec<&str> = rows.iter().map(|x| x["hook"].as_str().unwrap()).collect();
    hooks.sort();
    assert_eq!(hooks, ["file_ioctl", "file_ioctl_compat"], "{rows:?}");
    assert_eq!(
        rows[0]["calls"], rows[1]["calls"],
        "one probe, the same figures"
    );
    let ioctl = hook(&r, "file_ioctl");
    let n = ioctl["calls"].as_u64().unwrap();
    assert!(n >= 20, "{ioctl}");
    for row in rows.iter().chain([&ioctl]) {
        assert_eq!(row["cs_count"], 0, "no call lost to cs_count: {row}");
    }
    assert_eq!(rows[0]["calls"].as_u64().unwrap(), n);
}

/// --interval prints NDJSON snapshots that only grow; --syscall-time adds each
/// syscall's own time and the share of it spent in LSM hooks.
#[test]
fn trace_6_1_interval_and_syscall_time() {
    interval_and_syscall_time("6.1");
}

/// With session programs, "outermost" comes from the CPU's session depth.
#[test]
fn trace_7_3_interval_and_syscall_time() {
    interval_and_syscall_time("7.3");
}

fn interval_and_syscall_time(series: &str) {
    let script = ": > /tmp/x && lsmpmon trace --json --interval 0.02 --syscall-time \
        --hooks 'inode_getattr,inode_permission' --comm workload -- workload stat 20000 /tmp/x";
    let text = guest_stdout(series, script);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() >= 3,
        "expected snapshots and a final result: {text}"
    );
    let mut last = 0;
    for line in &lines {
        validate("trace.schema.json", line);
        let c = calls(&json(line), "inode_getattr");
        assert!(c >= last, "snapshots never shrink");
        last = c;
    }
    let r = json(lines.last().unwrap());
    assert_eq!(calls(&r, "inode_getattr"), 20001);
    let stat = r["syscalls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["syscall"] == "newfstatat")
        .expect("newfstatat row");
    let total = stat["total_ns"].as_u64().unwrap();
    let share = stat["lsm_share"].as_f64().unwrap();
    assert!(stat["calls"].as_u64().unwrap() >= 20000);
    assert!(total > stat["hook_sum_ns"].as_u64().unwrap());
    assert!(share > 0.0 && share < 1.0, "share {share}");
}

/// A TCP connection request is handled in a softirq (the loopback packet's
/// receive): its hooks belong to no task, go to "(softirq)" and not to the
/// connect() that was interrupted, and no task filter lets them through —
/// unless --with-interrupts gives them to the task they interrupted (the
/// lab's op-by-op traces: the op whose traffic ran them).
#[test]
fn trace_6_1_softirq_hooks_have_no_task() {
    let script = r#"
B="lsmpmon bench --ops tcp_connect --samples 3 --sample-ms 2"
lsmpmon trace --json --hooks 'inet_conn_request,socket_connect' -o /tmp/a.json -- $B > /dev/null 2>&1
echo "A $(tr -d '
' < /tmp/a.json)"
lsmpmon trace --json --hooks 'inet_conn_request,socket_connect' --comm lsmpmon -o /tmp/b.json   -- $B > /dev/null 2>&1
echo "B $(tr -d '
' < /tmp/b.json)"
lsmpmon trace --json --hooks 'inet_conn_request,socket_connect' --comm lsmpmon --with-interrupts -o /tmp/c.json -- $B > /dev/null 2>&1
echo "C $(tr -d '
' < /tmp/c.json)"
lsmpmon trace --json --hooks 'inet_conn_request,socket_connect' --comm nobody-runs-me --with-interrupts -o /tmp/d.json -- $B > /dev/null 2>&1
echo "D $(tr -d '
' < /tmp/d.json)"
"#;
    let text = guest_stdout("6.1", script);
    let a = tagged(&text, "A");
    let connects = calls(&a, "socket_connect");
    assert!(connects >= 10, "{a}");
    assert_eq!(
        syscall_hook_count(&a, "connect", "socket_connect"),
        connects
    );
    // Every connect is one request, all of them answered in a softirq.
    assert_eq!(calls(&a, "inet_conn_request"), connects, "{a}");
    assert_eq!(
        syscall_hook_count(&a, "(softirq)", "inet_conn_request"),
        connects,
        "{a}"
    );
    assert_eq!(syscall_hook_count(&a, "connect", "inet_conn_request"), 0);
    let b = tagged(&text, "B");
    assert!(calls(&b, "socket_connect") >= 10, "{b}");
    assert_eq!(calls(&b, "inet_conn_request"), 0, "{b}");
    // On one CPU a request's softirq runs on top of its connect(): with
    // --with-interrupts the filtered trace has them, in "(softirq)" — all
    // but the rare one the kernel leaves to ksoftirqd (seen: 176 of 177).
    let c = tagged(&text, "C");
    let connects = calls(&c, "socket_connect");
    assert!(connects >= 10, "{c}");
    assert_eq!(c["options"]["with_interrupts"], true, "{c}");
    let requests = calls(&c, "inet_conn_request");
    assert!(
        requests <= connects && requests * 20 >= connects * 19,
        "{requests} of {connects}: {c}"
    );
    assert_eq!(
        syscall_hook_count(&c, "(softirq)", "inet_conn_request"),
        requests,
        "{c}"
    );
    // A softirq on top of a task the filter refuses stays out.
    let d = tagged(&text, "D");
    assert_eq!(calls(&d, "socket_connect"), 0, "{d}");
    assert_eq!(calls(&d, "inet_conn_request"), 0, "{d}");
}

/// --pid and --cgroup keep only their subject: a second workload running at
/// the same time, outside the filter, is not counted.
#[test]
fn trace_6_1_pid_cgroup_filters_and_lean() {
    let script = r#"
set -e
: > /tmp/x
mkdir /sys/fs/cgroup/traced
# --pid: a process that becomes the workload (same pid) once the trace runs;
# it waits on a FIFO (no stat of its own while waiting).
mkfifo /tmp/go
sh -c 'read x < /tmp/go; exec workload stat 40 /tmp/x' >/dev/null &
P=$!
lsmpmon trace --json --hooks inode_getattr --pid $P -o /tmp/pid.json 2>/dev/null &
T=$!
while [ ! -S /run/lsmpmon/trace-$T.sock ]; do sleep 0.1; done
echo go > /tmp/go
workload stat 25 /tmp/x >/dev/null
wait $P
kill -INT $T; wait $T
echo "PID $(tr -d '\n' < /tmp/pid.json)"
# --cgroup: only tasks in /sys/fs/cgroup/traced.
lsmpmon trace --json --hooks inode_getattr --cgroup traced -o /tmp/cg.json 2>/dev/null &
T=$!
while [ ! -S /run/lsmpmon/trace-$T.sock ]; do sleep 0.1; done
sh -c 'echo $$ > /sys/fs/cgroup/traced/cgroup.procs; exec workload stat 30 /tmp/x' >/dev/null
workload stat 20 /tmp/x >/dev/null
kill -INT $T; wait $T
echo "CG $(tr -d '\n' < /tmp/cg.json)"
# --lean: LSMPMON's columns only, counted by the probes themselves.
lsmpmon trace --json --lean --comm workload --hooks 'inode_getattr,task_prctl' -o /tmp/lean.json -- \
  sh -c 'workload stat 50 /tmp/x && workload prctl 10 /tmp/x' >/dev/null 2>&1
echo "LEAN $(tr -d '\n' < /tmp/lean.json)"
"#;
    let text = guest_stdout("6.1", script);
    let part = |tag: &str| tagged(&text, tag);
    // 40 stats + stdio's fstat of stdout; the other workload's 26 are not there.
    assert_eq!(calls(&part("PID"), "inode_getattr"), 41);
    assert_eq!(calls(&part("CG"), "inode_getattr"), 31);

    let lean = part("LEAN");
    let getattr = hook(&lean, "inode_getattr");
    // 50 stats + one fstat of stdout per workload process.
    assert_eq!(
        (getattr["calls"].as_u64(), getattr["count"].as_u64()),
        (Some(52), Some(52))
    );
    let (min, max) = (
        getattr["min_ns"].as_u64().unwrap(),
        getattr["max_ns"].as_u64().unwrap(),
    );
    assert!(min > 0 && max >= min, "min {min} max {max}");
    assert_eq!(calls(&lean, "task_prctl"), 10);
    for h in [getattr, hook(&lean, "task_prctl")] {
        assert!(h["hist"].as_array().unwrap().is_empty(), "{h}");
        assert!(h["deny"].is_null(), "{h}");
    }
}

/// --count-only: one counting probe per call, exact calls and returns,
/// nothing timed, on every hook at once.
fn count_only(series: &str, method: &str) {
    let script = "mkdir -p /tmp/d && echo x > /tmp/d/file && \
        lsmpmon trace --json --count-only --comm workload -- sh -c '\
          workload stat 300 /tmp/d/file && workload open_close 100 /tmp/d/file && \
          workload prctl 40 /tmp/d && workload landlock_open 25 /tmp/d/file'";
    let text = guest_stdout(series, script);
    validate("trace.schema.json", &text);
    let r = json(&text);
    assert_eq!(r["probe"]["method"], method);
    assert_eq!(r["options"]["count_only"], true);
    assert!(r["probe"]["floor_ns"].is_null(), "nothing timed, no floor");
    assert!(r["syscalls"].as_array().unwrap().is_empty());
    // 300 stats + stdio's fstat of stdout in three of the four workload
    // processes (counts_filters_and_schema: 300 + 4 with five).
    let getattr = hook(&r, "inode_getattr");
    assert_eq!(getattr["calls"], 303, "{getattr}");
    assert_eq!(getattr["deny"], 0);
    let prctl = hook(&r, "task_prctl");
    assert_eq!(
        (prctl["calls"].as_u64(), prctl["error"].as_u64()),
        (Some(41), Some(41))
    );
    let open = hook(&r, "file_open");
    assert_eq!(open["deny"], 25, "{open}");
    assert_eq!(
        open["allow"].as_u64().unwrap() + 25,
        open["calls"].as_u64().unwrap()
    );
    for h in r["hooks"].as_array().unwrap() {
        for field in ["count", "cs_count", "sum_ns", "max_ns", "dropped"] {
            assert_eq!(h[field], 0, "{field}: {h}");
        }
        assert!(h["hist"].as_array().unwrap().is_empty(), "{h}");
    }
}

#[test]
fn trace_6_1_count_only() {
    count_only("6.1", "fexit (count only)");
}

/// 7.3: one counting program for every hook by one BPF_TRACE_FEXIT_MULTI link.
#[test]
fn trace_7_3_count_only() {
    count_only("7.3", "multi fexit (count only)");
}

/// Two traces never time through each other's probes: a trace waits for an
/// earlier one's release, refuses while another runs (unless told, and then
/// says so in its result); signals to a trace reach its command.
#[test]
fn trace_6_1_other_probes_release_and_signals() {
    let script = r#"
: > /tmp/x
lsmpmon trace --hooks 'inode_*' --duration 0.5 >/dev/null 2>&1
echo "NAME $(ps -o args | grep -c 'lsmpmon: [r]eleasing probes')"
lsmpmon trace --json --hooks inode_getattr --comm workload -o /tmp/a.json -- \
  workload stat 100 /tmp/x >/dev/null 2>/tmp/a.err
echo "WAITED $(grep -c 'waiting for an earlier' /tmp/a.err)"
echo "A $(tr -d '\n' < /tmp/a.json)"
lsmpmon trace --hooks inode_getattr -- sleep 60 >/dev/null 2>&1 &
T=$!
while [ ! -S /run/lsmpmon/trace-$T.sock ]; do sleep 0.1; done
lsmpmon trace --hooks inode_getattr --duration 1 >/dev/null 2>/tmp/b.err
echo "REFUSED $? $(wc -l < /tmp/b.err)"
lsmpmon trace --json --allow-other-probes --hooks inode_getattr --comm workload \
  -o /tmp/c.json -- workload stat 100 /tmp/x >/dev/null 2>&1
echo "C $(tr -d '\n' < /tmp/c.json)"
kill -TERM $T
wait $T
echo "SLEEP $(pidof sleep | wc -w)"
"#;
    let text = guest_stdout("6.1", script);
    let line = |tag: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{tag} ")))
            .unwrap_or_else(|| panic!("no {tag} line in {text}"))
            .to_string()
    };
    assert_eq!(line("NAME"), "1", "the release child names itself");
    assert_eq!(line("WAITED"), "1", "the next trace waited for the release");
    let a = tagged(&text, "A");
    assert!(a["probe"]["other_probes"].as_array().unwrap().is_empty());
    assert_eq!(line("REFUSED"), "1 1", "exit 1, one line");
    let c = tagged(&text, "C");
    let others = c["probe"]["other_probes"].as_array().unwrap();
    assert!(
        others.iter().any(|o| o == "security_inode_getattr"),
        "{others:?}"
    );
    // What the refusal prevents: the other trace's probes inflate the figure.
    let (ave_a, ave_c) = (
        hook(&a, "inode_getattr")["ave_ns"].as_f64().unwrap(),
        hook(&c, "inode_getattr")["ave_ns"].as_f64().unwrap(),
    );
    assert!(
        ave_c > ave_a + 100.0,
        "alone {ave_a:.0}, with another trace {ave_c:.0}"
    );
    assert_eq!(line("SLEEP"), "0", "SIGTERM reached the traced command");
}

/// A fully preemptible kernel could run another task in the middle of a
/// probe: trace refuses it with one line (exit 2) instead of mixing calls.
#[test]
fn trace_6_1_refuses_preempt_full() {
    let out = guest(
        "6.1",
        &["--append", "preempt=full"],
        "lsmpmon trace --duration 1",
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let line = one_error_line(&out);
    assert!(line.contains("preemption model 'full'"), "{line}");
}

/// The LSMPMON paper's own syscalls: `close` frees the file it closes (one
/// file_free_security per close, no open timed with it), `creat` is the creat syscall
/// (one inode_create each), `truncate` goes by path (one path_truncate
/// each). The trace counts only the timed runs (`--untimed-name`), which the
/// bench reports as `ops_run`.
#[test]
fn trace_6_1_paper_calls_time_their_own_syscall() {
    let mut script = String::from("mkdir -p /tmp/pb\n");
    for op in ["close", "creat", "truncate"] {
        script.push_str(&format!(
            "lsmpmon trace --json --syscall-time --hooks 'file_free_security,file_open,inode_create,path_truncate' \
             --comm lsmpmon -o /tmp/t.json -- lsmpmon bench --json --ops {op} --samples 2 --sample-ms 2 \
             --dir /tmp/pb --untimed-name lsmpmon-setup > /tmp/b.json\n\
             echo \"T{op} $(tr -d '\\n' < /tmp/t.json)\"\necho \"B{op} $(tr -d '\\n' < /tmp/b.json)\"\n"
        ));
    }
    let text = guest_stdout("6.1", &script);
    // Calls made between exec and taking the untimed name are counted too.
    const STARTUP: u64 = 20;
    for (op, syscall, hook) in [
        ("close", "close", "file_free_security"),
        ("creat", "creat", "inode_create"),
        ("truncate", "truncate", "path_truncate"),
    ] {
        let t = tagged(&text, &format!("T{op}"));
        let b = tagged(&text, &format!("B{op}"));
        let ran = b["results"][0]["ops_run"].as_u64().unwrap();
        assert!(ran >= 100, "{op}: {ran} runs");
        let in_call = syscall_hook_count(&t, syscall, hook);
        assert!(
            (ran..=ran + STARTUP).contains(&in_call),
            "{op}: {in_call} {hook} in {syscall} for {ran} ops: {t}"
        );
        // Nothing else is timed with it: no file opened, none created or
        // freed, outside the op's own syscall.
        for other in [
            "file_open",
            "inode_create",
            "file_free_security",
            "path_truncate",
        ] {
            let total = t["hooks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|h| h["hook"] == other)
                .map_or(0, |h| h["calls"].as_u64().unwrap());
            let own = syscall_hook_count(&t, syscall, other);
            assert!(
                total - own <= STARTUP,
                "{op}: {} {other} outside {syscall}: {t}",
                total - own
            );
        }
    }
}

/// `--by cgroup`: two cgroups running known workloads; each call in the
/// cgroup of the task that made it, the rows adding up to every hook's
/// calls; `--max-cgroups` folds the rest into "(other)"; `--count-only`
/// counts per cgroup without timing.
fn by_cgroup(series: &str) {
    let script = r#"
set -e
: > /tmp/x
mkdir /sys/fs/cgroup/a /sys/fs/cgroup/b
run() {
  lsmpmon trace --json --comm workload --hooks 'inode_getattr,file_open' --by cgroup "$@" -o /tmp/cg.json 2>/tmp/err &
  T=$!
  while [ ! -S /run/lsmpmon/trace-$T.sock ]; do sleep 0.1; done
  sh -c 'echo $$ > /sys/fs/cgroup/a/cgroup.procs; exec workload stat 30 /tmp/x' >/dev/null
  sh -c 'echo $$ > /sys/fs/cgroup/b/cgroup.procs; exec workload open_close 20 /tmp/x' >/dev/null
  sh -c 'echo $$ > /sys/fs/cgroup/b/cgroup.procs; exec workload stat 7 /tmp/x' >/dev/null
  kill -INT $T; wait $T || cat /tmp/err
}
run
echo "ALL $(tr -d '\n' < /tmp/cg.json)"
run --max-cgroups 1
echo "ONE $(tr -d '\n' < /tmp/cg.json)"
run --count-only
echo "COUNT $(tr -d '\n' < /tmp/cg.json)"
lsmpmon trace --hooks 'inode_getattr' --by cgroup -- workload stat 3 /tmp/x 2>&1 | grep -A3 "^per cgroup" | sed 's/^/TABLE /'
"#;
    let text = guest_stdout(series, script);
    let row = |r: &serde_json::Value, cgroup: &str, hook: &str| -> serde_json::Value {
        let rows = r["cgroups"]["cgroups"].as_array().unwrap();
        let g = rows.iter().find(|g| g["cgroup"] == cgroup);
        let g = g.unwrap_or_else(|| panic!("no {cgroup} in {}", r["cgroups"]));
        let h = g["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["hook"] == hook);
        h.cloned()
            .unwrap_or(serde_json::json!({"calls": 0, "timed": 0, "sum_ns": 0}))
    };
    let all = tagged(&text, "ALL");
    assert_eq!(all["options"]["by_cgroup"], true);
    // N stats and stdio's fstat of stdout, per workload process.
    exact_unless_skipped(&all, row(&all, "/a", "inode_getattr")["calls"].as_u64(), 31);
    exact_unless_skipped(&all, row(&all, "/b", "inode_getattr")["calls"].as_u64(), 9);
    assert_eq!(row(&all, "/a", "file_open")["calls"], 0);
    assert!(row(&all, "/b", "file_open")["calls"].as_u64().unwrap() >= 20);
    // The rows add up to each hook's calls, timed calls and time.
    for hook in ["inode_getattr", "file_open"] {
        let h = self::hook(&all, hook);
        let rows = all["cgroups"]["cgroups"].as_array().unwrap();
        let sum = |k: &str| -> u64 {
            rows.iter()
                .flat_map(|g| g["hooks"].as_array().unwrap())
                .filter(|x| x["hook"] == hook)
                .map(|x| x[k].as_u64().unwrap())
                .sum()
        };
        assert_eq!(sum("calls"), h["calls"].as_u64().unwrap(), "{hook}");
        assert_eq!(sum("timed"), h["count"].as_u64().unwrap(), "{hook}");
        assert_eq!(sum("sum_ns"), h["sum_ns"].as_u64().unwrap(), "{hook}");
    }
    assert_eq!(all["cgroups"]["lost_calls"], 0);
    // The cgroup with most calls kept, the other folded.
    let one = tagged(&text, "ONE");
    let names: Vec<&str> = one["cgroups"]["cgroups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["cgroup"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{}", one["cgroups"]);
    assert_eq!(names[1], "(other)");
    assert_eq!(one["cgroups"]["folded_cgroups"], 1);
    let count = tagged(&text, "COUNT");
    exact_unless_skipped(
        &count,
        row(&count, "/a", "inode_getattr")["calls"].as_u64(),
        31,
    );
    assert_eq!(row(&count, "/a", "inode_getattr")["timed"], 0);
    exact_unless_skipped(
        &count,
        row(&count, "/b", "inode_getattr")["calls"].as_u64(),
        9,
    );
    // The table: lsmpmon's own cgroup (the guest's root) ran the command.
    let table: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("TABLE "))
        .collect();
    assert!(table.iter().any(|l| l.starts_with('/')), "{table:?}");
}

/// `want` calls, unless the kernel skipped probe runs: one program for every
/// hook (7.3's multi-link) has one recursion guard per CPU, and a task
/// preempted inside it makes another's call on that CPU be skipped. Each
/// skip is counted (`probe.recursion_misses`), never hidden: a shortfall
/// must be covered by them (CI once saw 30 of 31 on 7.3).
fn exact_unless_skipped(r: &serde_json::Value, got: Option<u64>, want: u64) {
    let got = got.unwrap();
    let missed = r["probe"]["recursion_misses"].as_u64().unwrap();
    assert!(
        got <= want && want - got <= missed,
        "{got} calls of {want}, {missed} probe runs skipped: {}",
        r["cgroups"]
    );
}

#[test]
fn trace_6_1_by_cgroup() {
    by_cgroup("6.1");
}

#[test]
fn trace_7_3_by_cgroup() {
    by_cgroup("7.3");
}

/// `--sample N`: every call counted (calls, denials and the cgroup cells
/// exact, as when every call is timed), about one call in N timed, and the
/// timed calls' median where timing every call puts it. One boot, each
/// method: the sampled run, then the same workload timed in full.
fn sampled(series: &str, methods: &[&str]) {
    let mut script = String::from(
        r#"
set -e
mkdir -p /tmp/d /sys/fs/cgroup/a && echo x > /tmp/d/file
W='workload stat 4000 /tmp/d/file && workload landlock_open 25 /tmp/d/file'
run() {
  lsmpmon trace --json --method $1 --comm workload --hooks 'inode_getattr,file_open' $2 -o /tmp/r.json \
    -- sh -c "echo \$\$ > /sys/fs/cgroup/a/cgroup.procs; $W" > /dev/null 2> /tmp/err || cat /tmp/err
  echo "$3 $(tr -d '\n' < /tmp/r.json)"
}
"#,
    );
    for m in methods {
        script += &format!("run {m} '--sample 8 --by cgroup' SAMPLED-{m}\nrun {m} '' FULL-{m}\n");
    }
    script += "run fentry-fexit '--sample 8 --per-lsm' NESTED\n";
    script += "lsmpmon trace --json --timing-windows 0.5/1.5 --comm workload --hooks 'inode_getattr,file_open' \
        -o /tmp/r.json -- workload stat 1000000 /tmp/d/file > /dev/null 2> /tmp/err || cat /tmp/err\n\
        echo \"WINDOWED $(tr -d '\\n' < /tmp/r.json)\"\n";
    // The kernel refusing the multi-link (7.x): each hook's entry in turn.
    script += "LSMPMON_TEST_REFUSE_MULTI=1 lsmpmon trace --json --timing-windows 0.5/1.5 --comm workload \
        --hooks 'inode_getattr,file_open' -o /tmp/r.json -- workload stat 1000000 /tmp/d/file > /dev/null 2> /tmp/err \
        || cat /tmp/err\n\
        grep -q 'refused the timing windows' /tmp/err && echo WARNED\n\
        echo \"REFUSED $(tr -d '\\n' < /tmp/r.json)\"\n";
    // 7.3: IMA's file_post_open calls a hook of its own (current_getlsmprop_subj),
    // whose probe pair comes out of it.
    if series == "7.3" {
        for (tag, opt) in [
            ("POST-FULL", "--method fentry-fexit"),
            ("POST-WINDOWS", "--timing-windows 0.5/1.5"),
        ] {
            script += &format!(
                "rm -f /tmp/r.json; lsmpmon trace --json {opt} --comm workload --hooks file_post_open,current_getlsmprop_subj \
                -o /tmp/r.json -- workload open_close 200000 /tmp/d/file > /dev/null 2> /tmp/err || cat /tmp/err\n\
                echo \"{tag} $(tr -d '\\n' < /tmp/r.json)\"\n"
            );
        }
    }
    script +=
        "lsmpmon trace --sample 8 --hooks inode_getattr -- workload stat 50 /tmp/d/file 2>&1 \
        | grep -A2 '^per hook' | sed 's/^/TABLE /'\n";
    let text = guest_stdout(series, &script);
    for m in methods {
        let s = tagged(&text, &format!("SAMPLED-{m}"));
        let full = tagged(&text, &format!("FULL-{m}"));
        validate("trace.schema.json", &s.to_string());
        assert_eq!(s["options"]["sample_every"], 8);
        assert!(full["options"]["sample_every"].is_null());
        let (getattr, full_getattr) = (hook(&s, "inode_getattr"), hook(&full, "inode_getattr"));
        let calls = getattr["calls"].as_u64().unwrap();
        assert!(calls > 4000, "{getattr}");
        exact_unless_skipped(&s, Some(calls), full_getattr["calls"].as_u64().unwrap());
        let timed = getattr["count"].as_u64().unwrap();
        assert!(
            timed * 8 > calls * 6 / 10 && timed * 8 < calls * 16 / 10,
            "{m}: {timed} of {calls} timed, about 1 in 8 expected"
        );
        assert!(getattr["untimed"].as_u64().unwrap() > calls / 2);
        // Denials come back on untimed calls too.
        let open = hook(&s, "file_open");
        assert_eq!(open["deny"], 25, "{m}: {open}");
        // The cgroup's cell holds every call and exactly the timed ones.
        let cell = s["cgroups"]["cgroups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["cgroup"] == "/a")
            .and_then(|g| {
                g["hooks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|h| h["hook"] == "inode_getattr")
            })
            .unwrap_or_else(|| panic!("{m}: no /a cell in {}", s["cgroups"]))
            .clone();
        assert_eq!(cell["calls"].as_u64(), Some(calls), "{m}: {cell}");
        assert_eq!(cell["timed"].as_u64(), Some(timed), "{m}: {cell}");
        assert_eq!(cell["sum_ns"], getattr["sum_ns"], "{m}");
        let (p50, full_p50) = (
            getattr["p50_ns"].as_f64().unwrap(),
            full_getattr["p50_ns"].as_f64().unwrap(),
        );
        assert!(
            (p50 / full_p50 - 1.0).abs() <= 0.05,
            "{m}: sampled p50 {p50} against {full_p50} timing every call"
        );
    }
    // A module's function runs inside its hook: timed with every timed hook
    // call (its cost comes out of the hook's), but its own timed calls are
    // its own draws, about 1 in 8 (not 2 in 8).
    let nested = tagged(&text, "NESTED");
    let functions: Vec<&serde_json::Value> = nested["per_lsm"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["hook"] == "inode_getattr" && l["calls"].as_u64().unwrap() > 4000)
        .collect();
    assert!(!functions.is_empty(), "{}", nested["per_lsm"]);
    for f in functions {
        let (calls, timed) = (f["calls"].as_u64().unwrap(), f["count"].as_u64().unwrap());
        assert!(
            timed * 8 > calls * 6 / 10 && timed * 8 < calls * 16 / 10,
            "{}: {timed} of {calls} timed, about 1 in 8 expected",
            f["function"]
        );
    }
    let table: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("TABLE "))
        .collect();
    assert!(
        table.iter().any(|l| l.contains("1 call in 8 timed")),
        "{table:?}"
    );
    let header = table.iter().find(|l| l.starts_with("hook "));
    let columns: Vec<&str> = header
        .expect("the table's header")
        .split_whitespace()
        .collect();
    assert!(columns.contains(&"untimed"), "{columns:?}");
    let full = tagged(&text, "FULL-fentry-fexit");
    let by_link = series == "7.3";
    let full_getattr = hook(&full, "inode_getattr");
    windowed(&tagged(&text, "WINDOWED"), full_getattr, by_link);
    // Refused, the multi-link is said to be, and each hook's entry does its work.
    assert_eq!(text.lines().any(|l| l == "WARNED"), by_link, "{text}");
    windowed(&tagged(&text, "REFUSED"), full_getattr, false);
    if series == "7.3" {
        nested_in_windows(&tagged(&text, "POST-FULL"), &tagged(&text, "POST-WINDOWS"));
    }
}

/// A hook with a nested hook in it reads in windows as timing every call
/// does (its nested pair calibrated as the windows' own; no call timed while
/// a window's entries settle).
fn nested_in_windows(full: &serde_json::Value, windows: &serde_json::Value) {
    let (f, w) = (
        hook(full, "file_post_open"),
        hook(windows, "file_post_open"),
    );
    assert!(w["count"].as_u64().unwrap() > 10_000, "{w}");
    assert!(w["nested_probes"].as_u64().unwrap() > 10_000, "{w}");
    for q in ["p50_ns", "p99_ns"] {
        let (a, b) = (w[q].as_f64().unwrap(), f[q].as_f64().unwrap());
        assert!(
            (a / b - 1.0).abs() <= 0.05,
            "file_post_open {q} {a} in windows against {b} timing every call"
        );
    }
}

/// --timing-windows: every call counted, the calls in windows timed (a
/// share of them, not all, not none), and each hook's time estimated from
/// the windows as timing every call gives it.
fn windowed(w: &serde_json::Value, full_getattr: &serde_json::Value, by_link: bool) {
    validate("trace.schema.json", &w.to_string());
    let windows = &w["options"]["timing_windows"];
    let closed = windows["closed"].as_u64().unwrap();
    assert!(closed >= 2, "{windows}");
    // One multi-link (7.x) is made and dropped once a window: two changes,
    // and one more if a window was open at the end; per hook, more.
    let changes = windows["entry_changes"].as_u64().unwrap();
    let one_link = changes == 2 * closed || changes == 2 * closed + 1;
    if by_link {
        assert!(one_link, "{windows}");
    }
    let getattr = hook(w, "inode_getattr");
    let calls = getattr["calls"].as_u64().unwrap();
    let timed = getattr["count"].as_u64().unwrap();
    assert!(calls >= 1_000_000, "{getattr}");
    assert!(
        timed > calls / 10 && timed < calls * 9 / 10,
        "{timed} of {calls} timed in windows of 0.5 s every 1.5 s"
    );
    let p50 = |h: &serde_json::Value| h["p50_ns"].as_f64().unwrap();
    assert!(
        (p50(getattr) / p50(full_getattr) - 1.0).abs() <= 0.05,
        "p50 {} in windows against {} timing every call",
        p50(getattr),
        p50(full_getattr)
    );
    // Every call valued, not only the timed ones (the full run is shorter:
    // its mean has a cold first call in it, the p50 does not).
    let estimate = getattr["time_estimate_ns"].as_f64().unwrap();
    let want = calls as f64 * p50(full_getattr);
    assert!(
        (estimate / want - 1.0).abs() <= 0.10,
        "estimate {estimate} ns for {calls} calls, {want} at the full run's p50"
    );
}

#[test]
fn trace_6_1_sampled() {
    sampled("6.1", &["fentry-fexit"]);
}

/// 7.3: the fentry/fexit copies with preemption disabled (serve's sampled
/// method) and the session multi-link's untimed cookie.
#[test]
fn trace_7_3_sampled() {
    sampled("7.3", &["fentry-fexit", "multi-session"]);
}
