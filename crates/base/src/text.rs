//! Bytes lsmpmon did not write (a workload's or a guest's output, a file
//! name, an engine's message) as one bounded line of text: what would act on
//! a terminal (control characters, newlines, bidirectional overrides) is
//! written as its escape, invalid UTF-8 as `\xNN`, and a long text is cut.
//! Applied where such bytes enter lsmpmon, so that what is printed and what
//! results record is text every reader takes.

/// `text` escaped, at most `max_chars` characters of it, a cut said with "…".
pub fn one_line(text: &str, max_chars: usize) -> String {
    escaped(text.as_bytes(), max_chars)
}

/// `bytes` escaped (invalid UTF-8 as `\xNN`), at most `max_chars`
/// characters of them, a cut said with "…".
pub fn escaped(bytes: &[u8], max_chars: usize) -> String {
    let mut out = Bounded {
        text: String::new(),
        chars: 0,
        max_chars,
    };
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if !out.push(c) {
                return out.cut();
            }
        }
        for b in chunk.invalid() {
            if !out.push_escape(&format!("\\x{b:02x}")) {
                return out.cut();
            }
        }
    }
    out.text
}

/// The escaped text so far; an escape counts its own characters.
struct Bounded {
    text: String,
    chars: usize,
    max_chars: usize,
}

impl Bounded {
    /// Adds `c` (escaped if it must be); false when there was no room.
    fn push(&mut self, c: char) -> bool {
        if c.is_control() || is_bidi(c) {
            return self.push_escape(&c.escape_default().to_string());
        }
        if self.chars >= self.max_chars {
            return false;
        }
        self.text.push(c);
        self.chars += 1;
        true
    }

    fn push_escape(&mut self, escape: &str) -> bool {
        let n = escape.chars().count();
        if self.chars + n > self.max_chars {
            return false;
        }
        self.text.push_str(escape);
        self.chars += n;
        true
    }

    fn cut(mut self) -> String {
        self.text.push('…');
        self.text
    }
}

/// `text` with what would act on a terminal escaped, newlines and tabs
/// kept (as results record a module's statistics file), not bounded.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c if c.is_control() || is_bidi(c) => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

/// Every string in `v` (keys too) made [`printable`]: a document another
/// machine wrote (a guest's report) as text every reader takes.
pub fn printable_json(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) if s.chars().any(|c| c.is_control() || is_bidi(c)) => {
            *s = printable(s);
        }
        Value::Array(items) => items.iter_mut().for_each(printable_json),
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (k, mut x) in old {
                printable_json(&mut x);
                map.insert(printable(&k), x);
            }
        }
        _ => {}
    }
}

/// The characters that reorder what a terminal shows after them.
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_bounds() {
        assert_eq!(
            one_line("a\u{1b}[2K\rb\nc\u{202e}", 100),
            "a\\u{1b}[2K\\rb\\nc\\u{202e}"
        );
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("abc", 3), "abc");
        // An escape is never cut in half.
        assert_eq!(one_line("ab\r", 3), "ab…");
    }

    #[test]
    fn a_document_keeps_its_lines_and_loses_its_escapes() {
        let mut v = serde_json::json!({"a\u{1b}": ["x\ty\nz\r\u{1b}[2K", 3]});
        printable_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a\\u{1b}": ["x\ty\nz\\r\\u{1b}[2K", 3]})
        );
    }

    #[test]
    fn invalid_utf8_is_escaped_byte_by_byte() {
        assert_eq!(escaped(b"ok \xff\xfe end", 100), "ok \\xff\\xfe end");
        assert_eq!(escaped("é\u{7}".as_bytes(), 100), "é\\u{7}");
    }
}
