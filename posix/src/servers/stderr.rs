//! A server's stderr in its last error: the hub keeps the end of it
//! ([`excerpt`]) after the exit's reason (`reason; stderr: TAIL`), and a
//! one-line view ([`headline`]) gives the reason with the last line, which
//! is the one that says why (a traceback's exception).

/// Between an exit's reason and its stderr excerpt in a last error.
pub const SEPARATOR: &str = "; stderr: ";

/// The end of `tail` in at most `max` characters: its last non-blank lines,
/// whole; when even the last is longer, its end from the start of a word,
/// after `…`.
pub fn excerpt(tail: &str, max: usize) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut used = 0;
    for line in tail.lines().rev().map(str::trim_end).filter(|l| !l.trim().is_empty()) {
        let n = line.chars().count() + usize::from(!kept.is_empty());
        if used + n > max {
            if kept.is_empty() {
                return cut_front(line, max);
            }
            break;
        }
        used += n;
        kept.push(line);
    }
    kept.reverse();
    kept.join("\n")
}

/// The end of `line` in at most `max` characters, from a word's start.
fn cut_front(line: &str, max: usize) -> String {
    let skip = line.chars().count() + 1 - max.max(1);
    let at_word = line.chars().nth(skip - 1).is_some_and(char::is_whitespace);
    let end: String = line.chars().skip(skip).collect();
    let end = match end.split_once(char::is_whitespace) {
        Some((_, rest)) if !at_word && !rest.trim().is_empty() => rest,
        _ => &end,
    };
    format!("…{}", end.trim_start())
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
            // One word longer than all: cut where it must be.
            ("onetwothreefour", 6, "…efour".to_string()),
            ("\n\n  \n", 50, String::new()),
            ("ok\n\nstill ok\n", 50, "ok\nstill ok".to_string()),
        ];
        for (tail, max, want) in table {
            let got = excerpt(tail, max);
            assert_eq!(got, want, "{tail:?} in {max}");
            assert!(got.chars().count() <= max, "{got:?}");
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
