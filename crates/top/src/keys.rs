//! `top`'s keys: s sort, / filter (Enter keeps, Esc drops), p pause,
//! g hooks / cgroups (with --by cgroup), r reset, q / Esc / Ctrl-C quit.
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::delta::SortKey;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub sort: SortKey,
    pub filter: String,
    /// The filter being typed, if `/` was pressed.
    pub editing: Option<String>,
    pub paused: bool,
    /// Rows are cgroups, not hooks (g; only with --by cgroup).
    pub by_cgroup: bool,
    /// The trace breaks calls down by cgroup (--by cgroup): g can switch.
    pub cgroups_recorded: bool,
}

impl Default for State {
    fn default() -> Self {
        State {
            sort: SortKey::Time,
            filter: String::new(),
            editing: None,
            paused: false,
            by_cgroup: false,
            cgroups_recorded: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    None,
    Reset,
    Quit,
}

impl State {
    pub fn key(&mut self, k: KeyEvent) -> Action {
        if k.kind == KeyEventKind::Release {
            return Action::None;
        }
        if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
            return Action::Quit;
        }
        if let Some(text) = self.editing.as_mut() {
            match k.code {
                KeyCode::Enter => self.filter = self.editing.take().unwrap_or_default(),
                KeyCode::Esc => self.editing = None,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) if !c.is_control() && text.len() < 64 => text.push(c),
                _ => {}
            }
            return Action::None;
        }
        match k.code {
            KeyCode::Char('q') | KeyCode::Esc => return Action::Quit,
            KeyCode::Char('s') => self.sort = self.sort.next(),
            KeyCode::Char('/') => self.editing = Some(self.filter.clone()),
            KeyCode::Char('p') | KeyCode::Char(' ') => self.paused = !self.paused,
            KeyCode::Char('r') => return Action::Reset,
            KeyCode::Char('g') => self.by_cgroup = self.cgroups_recorded && !self.by_cgroup,
            _ => {}
        }
        Action::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(s: &mut State, code: KeyCode) -> Action {
        s.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    #[test]
    fn filter_is_typed_then_kept_or_dropped() {
        let mut s = State::default();
        press(&mut s, KeyCode::Char('/'));
        for c in "inodq".chars() {
            // 'q' while typing is text, not quit.
            assert_eq!(press(&mut s, KeyCode::Char(c)), Action::None);
        }
        press(&mut s, KeyCode::Backspace);
        press(&mut s, KeyCode::Char('e'));
        press(&mut s, KeyCode::Enter);
        assert_eq!((s.filter.as_str(), s.editing.is_none()), ("inode", true));
        press(&mut s, KeyCode::Char('/'));
        press(&mut s, KeyCode::Char('x'));
        press(&mut s, KeyCode::Esc);
        assert_eq!(s.filter, "inode");
    }

    #[test]
    fn sort_pause_reset_and_quit() {
        let mut s = State::default();
        press(&mut s, KeyCode::Char('s'));
        assert_eq!(s.sort, SortKey::Calls);
        press(&mut s, KeyCode::Char('p'));
        assert!(s.paused);
        press(&mut s, KeyCode::Char('g'));
        assert!(!s.by_cgroup, "no cgroups recorded: nothing to switch to");
        s.cgroups_recorded = true;
        press(&mut s, KeyCode::Char('g'));
        assert!(s.by_cgroup);
        press(&mut s, KeyCode::Char('g'));
        assert!(!s.by_cgroup);
        assert_eq!(press(&mut s, KeyCode::Char('r')), Action::Reset);
        assert_eq!(press(&mut s, KeyCode::Char('q')), Action::Quit);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(s.key(ctrl_c), Action::Quit);
    }
}
