//! A server's stderr in its last error: the hub keeps the end of it
//! ([`excerpt`]) after the exit's reason (`reason; stderr: TAIL`), and a
//! one-line view ([`headline`]) gives the reason with the last line, which
//! is the one that says why (a traceback's exception).

/// Between an exit's reason and its stderr excerpt in a last error.
pub const SEPARATOR: &str = "; stderr: ";

/// The end of `tail` in about `max` characters, from a line's start; when
/// its last line alone is longer, that line's end from a word's start,
/// after `…`.
pub fn excerpt(tail: &str, max: usize) -> String {
    let tail = tail.trim();
    // Where its last `max` characters begin, when it has more.
    let Some((at, _)) = tail.char_indices().rev().nth(max.saturating_sub(1)).filter(|&(at, _)| at > 0) else { return tail.to_string() };
    let (before, kept) = tail.split_at(at);
    if before.ends_with('\n') {
        return kept.to_string();
    }
    if let Some((_, lines)) = kept.split_once('\n') {
        return lines.to_string();
    }
    let words = match kept.split_once(' ') {
        Some((_, rest)) if !before.ends_with(' ') => rest,
        _ => kept,
    };
    format!("…{}", words.trim_start())
}

/// A last error on one line: its reason, and the last line of its stderr
/// (`mcpx status`).
#[cfg(feature = "cli")]
pub fn headline(last_error: &str) -> String {
    let (reason, tail) = last_error.split_once(SEPARATOR).unwrap_or((last_error, ""));
    let reason = reason.lines().next().unwrap_or("");
    match tail.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
        Some(last) => format!("{reason}: {last}"),
        None => reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACEBACK: &str = "Traceback (most recent call last):\n  File \"/srv/server.py\", line 12, in <module>\n    main()\n  File \"/srv/server.py\", line 9, in main\n    cfg.load()\nAttributeError: 'NoneType' object has no attribute 'load'\n\n";

    #[test]
    fn the_excerpt_keeps_whole_last_lines() {
        // (tail, max, excerpt)
        let table = [
            (TRACEBACK, 500, TRACEBACK.trim_end().to_string()),
            (TRACEBACK, 71, "AttributeError: 'NoneType' object has no attribute 'load'".to_string()),
            (TRACEBACK, 72, "    cfg.load()\nAttributeError: 'NoneType' object has no attribute 'load'".to_string()),
            (TRACEBACK, 56, "…'NoneType' object has no attribute 'load'".to_string()),
            ("one two three four", 12, "…three four".to_string()),
            ("one two three four", 11, "…three four".to_string()),
            ("one two three four", 10, "…three four".to_string()),
            ("one two three four", 18, "one two three four".to_string()),
            // One word longer than all: cut where it must be.
            ("onetwothreefour", 6, "…eefour".to_string()),
            ("\n\n  \n", 50, String::new()),
            ("ok\n\nstill ok\n", 50, "ok\n\nstill ok".to_string()),
        ];
        for (tail, max, want) in table {
            let got = excerpt(tail, max);
            assert_eq!(got, want, "{tail:?} in {max}");
            assert!(got.chars().count() <= max + 1, "{got:?}");
        }
    }

    #[cfg(feature = "cli")]
    #[test]
    fn the_headline_is_the_reason_and_the_last_line() {
        let err = format!("exited with status 1{SEPARATOR}{}", excerpt(TRACEBACK, 500));
        // (last error, headline)
        let table = [
            (err.as_str(), "exited with status 1: AttributeError: 'NoneType' object has no attribute 'load'"),
            ("exited with status 3", "exited with status 3"),
            ("exited with 1\nmore", "exited with 1"),
            ("killed by signal 9; stderr: \n\n", "killed by signal 9"),
        ];
        for (e, want) in table {
            assert_eq!(headline(e), want, "{e:?}");
        }
    }
}
