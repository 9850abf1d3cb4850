//! Reader of the shared requirement list: a markdown file whose requirement
//! tables have ten columns (id | revs | side | level | area | quote | url |
//! mcpx-as-server | mcpx-as-client | changes). Tables with other headers
//! (counts, folded duplicates) are skipped.

/// The protocol revisions, oldest first. A row's range is a span of this list.
pub const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// Level buckets used for counting, strongest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Must,
    Should,
    May,
    /// Lowercase or informal keywords ("must (informal)", "should (lowercase)").
    Informal,
    /// Definitions, descriptions, schema shapes without an RFC 2119 keyword.
    Descriptive,
}

impl Level {
    pub const ALL: [Level; 5] = [
        Level::Must,
        Level::Should,
        Level::May,
        Level::Informal,
        Level::Descriptive,
    ];
    pub fn label(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
            Level::May => "MAY",
            Level::Informal => "informal",
            Level::Descriptive => "descriptive",
        }
    }
    /// Buckets a level cell by its strongest keyword: uppercase RFC 2119 words
    /// first (MUST/REQUIRED/SHALL, then SHOULD/RECOMMENDED, then MAY/OPTIONAL),
    /// then lowercase ones, else descriptive.
    pub fn classify(cell: &str) -> Level {
        let words: Vec<&str> = cell
            .split(|c: char| !c.is_ascii_alphabetic())
            .filter(|w| !w.is_empty())
            .collect();
        let has = |set: &[&str]| words.iter().any(|w| set.contains(w));
        if has(&["MUST", "REQUIRED", "SHALL"]) {
            Level::Must
        } else if has(&["SHOULD", "RECOMMENDED"]) {
            Level::Should
        } else if has(&["MAY", "OPTIONAL"]) {
            Level::May
        } else if has(&["must", "should", "may", "required", "shall"]) {
            Level::Informal
        } else {
            Level::Descriptive
        }
    }
}

/// The parties a row binds, from its side cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sides {
    pub server: bool,
    pub client: bool,
    pub intermediary: bool,
    pub auth_server: bool,
}

impl Sides {
    pub fn parse(cell: &str) -> Sides {
        let lower = cell.to_ascii_lowercase();
        // Only the part before a parenthesis names parties: "both (receiver)",
        // "client (text says “Clients”; see Conflicts)".
        let head = lower.split('(').next().unwrap_or("");
        let mut s = Sides::default();
        for part in head.split(|c: char| c == ',' || c == '/' || c.is_whitespace()) {
            match part {
                "both" => {
                    s.server = true;
                    s.client = true;
                }
                "server" => s.server = true,
                "client" => s.client = true,
                "intermediary" => s.intermediary = true,
                "auth-server" => s.auth_server = true,
                _ => {}
            }
        }
        s
    }
}

/// One requirement row. Every cell is kept, though the tool reads only some.
#[allow(dead_code)]
#[derive(Clone, Debug)]
pub struct Req {
    pub id: String,
    pub revs_raw: String,
    /// Indexes into REVISIONS covered by the row's range.
    pub revs: Vec<usize>,
    /// The range is marked "(ext)": the tasks extension of 2026-07-28.
    pub extension: bool,
    pub side_raw: String,
    pub sides: Sides,
    pub level_raw: String,
    pub level: Level,
    pub area: String,
    pub quote: String,
    pub url: String,
    pub note_server: String,
    pub note_client: String,
    pub changes: String,
    /// The plain-text line above the table the row sits in.
    pub section: String,
    pub line: usize,
}

/// Splits one markdown table line into trimmed cells. `\|` is a literal pipe
/// inside a cell, `\\` a literal backslash; other backslashes are kept.
pub fn split_cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some('|') => {
                    cur.push('|');
                    chars.next();
                }
                Some('\\') => {
                    cur.push('\\');
                    chars.next();
                }
                _ => cur.push('\\'),
            },
            '|' => {
                cells.push(cur.trim().to_string());
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    // A line without the closing pipe still has its last cell.
    if !cur.trim().is_empty() {
        cells.push(cur.trim().to_string());
    }
    cells
}

fn rev_index(s: &str) -> Option<usize> {
    REVISIONS.iter().position(|r| *r == s)
}

/// Parses a revision cell: one revision, or a range "a..b" / "a – b" / "a - b",
/// optionally followed by a parenthesised remark such as "(ext)".
pub fn parse_revs(cell: &str) -> Result<(Vec<usize>, bool), String> {
    let extension = cell.contains("(ext");
    let head = cell.split('(').next().unwrap_or("").trim();
    let dates: Vec<&str> = head
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .map(|s| s.trim_matches('-'))
        .filter(|s| s.len() == 10)
        .collect();
    let idx: Vec<usize> = dates
        .iter()
        .map(|d| rev_index(d).ok_or_else(|| format!("unknown revision {d:?} in {cell:?}")))
        .collect::<Result<_, _>>()?;
    match idx.as_slice() {
        [one] => Ok((vec![*one], extension)),
        [a, b] if a <= b => Ok(((*a..=*b).collect(), extension)),
        _ => Err(format!("cannot read revision range {cell:?}")),
    }
}

fn looks_like_url(cell: &str) -> bool {
    let c = cell.trim();
    c.starts_with("http://")
        || c.starts_with("https://")
        || c.starts_with("docs/")
        || c.starts_with("GH(")
        || (c.len() > 11 && rev_index(&c[..10]).is_some() && c.as_bytes()[10] == b'/')
}

#[derive(Debug)]
pub struct Parsed {
    pub reqs: Vec<Req>,
    /// Rows that were read with a repair (unescaped pipe in a quote, missing
    /// trailing cell); the text of the shared file should be fixed upstream.
    pub warnings: Vec<String>,
}

const HEADER: [&str; 3] = ["id", "revs", "side"];

/// Parses every requirement row of the file.
pub fn parse(text: &str) -> Result<Parsed, String> {
    let mut reqs: Vec<Req> = Vec::new();
    let mut warnings = Vec::new();
    let mut section = String::new();
    let mut in_req_table = false;
    let lines: Vec<&str> = text.lines().collect();
    let is_sep = |l: &str| {
        let c = split_cells(l);
        !c.is_empty()
            && c.iter()
                .all(|c| !c.is_empty() && c.chars().all(|ch| ch == '-' || ch == ':'))
    };
    for (n, line) in lines.iter().enumerate() {
        let lineno = n + 1;
        if !line.trim_start().starts_with('|') {
            in_req_table = false;
            if !line.trim().is_empty() {
                section = line.trim().trim_start_matches('#').trim().to_string();
            }
            continue;
        }
        let cells = split_cells(line);
        // A table header is the line above a separator line.
        if lines
            .get(n + 1)
            .is_some_and(|l| l.trim_start().starts_with('|') && is_sep(l))
        {
            in_req_table = cells.len() == 10 && cells[..3] == HEADER;
            continue;
        }
        if !in_req_table || is_sep(line) {
            continue;
        }
        let mut cells = cells;
        if cells.len() > 10 {
            // An unescaped pipe inside the quote: the url cell tells where it ends.
            let url_at = (6..cells.len())
                .find(|&i| looks_like_url(&cells[i]))
                .ok_or_else(|| format!("line {lineno}: {} cells and no url cell", cells.len()))?;
            let quote = cells[5..url_at].join(" | ");
            cells.splice(5..url_at, [quote]);
            warnings.push(format!(
                "line {lineno}: unescaped pipe in the quote of {}",
                cells[0]
            ));
        }
        if cells.len() < 10 {
            if cells.len() < 7 {
                return Err(format!("line {lineno}: only {} cells", cells.len()));
            }
            warnings.push(format!(
                "line {lineno}: {} cells, missing ones read as empty ({})",
                cells.len(),
                cells[0]
            ));
            cells.resize(10, String::new());
        }
        if cells.len() != 10 {
            return Err(format!("line {lineno}: {} cells after repair", cells.len()));
        }
        let id = cells[0].trim_matches('`').to_string();
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(format!("line {lineno}: bad row id {id:?}"));
        }
        if reqs.iter().any(|r| r.id == id) {
            return Err(format!("line {lineno}: duplicate row id {id}"));
        }
        let (revs, extension) = parse_revs(&cells[1]).map_err(|e| format!("line {lineno}: {e}"))?;
        reqs.push(Req {
            id,
            revs_raw: cells[1].clone(),
            revs,
            extension,
            side_raw: cells[2].clone(),
            sides: Sides::parse(&cells[2]),
            level_raw: cells[3].clone(),
            level: Level::classify(&cells[3]),
            area: cells[4].clone(),
            quote: cells[5].clone(),
            url: cells[6].clone(),
            note_server: cells[7].clone(),
            note_client: cells[8].clone(),
            changes: cells[9].clone(),
            section: section.clone(),
            line: lineno,
        });
    }
    if reqs.is_empty() {
        return Err("no requirement rows found".into());
    }
    Ok(Parsed { reqs, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "| id | revs | side | level | area | quote | url | mcpx-as-server | mcpx-as-client | changes |\n|---|---|---|---|---|---|---|---|---|---|\n";

    #[test]
    fn splits_cells_and_unescapes_pipes() {
        let c = split_cells(r"| a | “x \| y” | back\\slash | c\d |");
        assert_eq!(c, vec!["a", "“x | y”", r"back\slash", r"c\d"]);
    }

    #[test]
    fn parses_rows_with_escaped_pipe_in_quote() {
        let text = format!(
            "Intro\n{HEAD}| r-one | 2024-11-05..2025-11-25 | both (receiver) | MUST / MAY | messages | “a \\| b” | https://x | yes | no | |\n"
        );
        let p = parse(&text).unwrap();
        assert!(p.warnings.is_empty());
        let r = &p.reqs[0];
        assert_eq!(r.id, "r-one");
        assert_eq!(r.quote, "“a | b”");
        assert_eq!(r.revs, vec![0, 1, 2, 3]);
        assert!(r.sides.server && r.sides.client);
        assert_eq!(r.level, Level::Must);
        assert_eq!(r.section, "Intro");
    }

    #[test]
    fn repairs_unescaped_pipe_and_missing_cell() {
        let text = format!(
            "{HEAD}| r-a | 2026-07-28 | server | REQUIRED (schema) | caching | s: \"public\" | \"private\" | 2026-07-28/schema#x | yes | no | new |\n| r-b | 2025-11-25 – 2026-07-28 | client | MAY | x | “q” | https://u | yes | n/a |\n"
        );
        let p = parse(&text).unwrap();
        assert_eq!(p.reqs.len(), 2);
        assert_eq!(p.reqs[0].quote, "s: \"public\" | \"private\"");
        assert_eq!(p.reqs[0].url, "2026-07-28/schema#x");
        assert_eq!(p.reqs[0].changes, "new");
        assert_eq!(p.reqs[1].revs, vec![3, 4]);
        assert_eq!(p.reqs[1].changes, "");
        assert_eq!(p.warnings.len(), 2);
    }

    #[test]
    fn skips_other_tables_and_rejects_duplicates() {
        let text = format!(
            "| revision | total |\n|---|---|\n| 2024-11-05 | 3 |\n{HEAD}| r | 2025-03-26 | client | SHOULD | a | q | https://u | | | |\n| dropped | kept |\n|---|---|\n| x | r |\n"
        );
        let p = parse(&text).unwrap();
        assert_eq!(p.reqs.len(), 1);
        let dup = format!("{HEAD}| r | 2025-03-26 | client | SHOULD | a | q | https://u | | | |\n| r | 2025-03-26 | client | SHOULD | a | q | https://u | | | |\n");
        assert!(parse(&dup).unwrap_err().contains("duplicate"));
    }

    #[test]
    fn revision_ranges() {
        assert_eq!(parse_revs("2026-07-28 (ext)").unwrap(), (vec![4], true));
        assert_eq!(
            parse_revs("2025-06-18 – 2026-07-28").unwrap(),
            (vec![2, 3, 4], false)
        );
        assert!(parse_revs("2023-01-01").is_err());
        assert!(parse_revs("2026-07-28..2025-03-26").is_err());
    }

    #[test]
    fn levels_and_sides() {
        assert_eq!(
            Level::classify("SHOULD (prose) / MUST (schema)"),
            Level::Must
        );
        assert_eq!(Level::classify("should (lowercase)"), Level::Informal);
        assert_eq!(Level::classify("descr. (MAY)"), Level::May);
        assert_eq!(Level::classify("(definitional)"), Level::Descriptive);
        assert_eq!(Level::classify("RECOMMENDED"), Level::Should);
        let s = Sides::parse("client, auth-server");
        assert!(s.client && s.auth_server && !s.server);
        let s = Sides::parse("client (text says “Clients”; see Conflicts)");
        assert!(s.client && !s.server);
    }
}
