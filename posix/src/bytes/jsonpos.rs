//! A light scanner over JSON text that serde_json has already accepted: it
//! finds where a member or element sits (for error messages with line and
//! column) and lists an object's keys in source order (server order, and
//! duplicate keys, which serde_json silently collapses).
//!
//! It assumes valid JSON; on anything unexpected it gives up with `None`.

/// One step of a path into a JSON document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Idx(usize),
}

/// A path, displayed as `mcpServers.github.args[2]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path(pub Vec<Seg>);

impl Path {
    pub fn root() -> Path {
        Path(Vec::new())
    }
    pub fn key(&self, k: &str) -> Path {
        let mut v = self.0.clone();
        v.push(Seg::Key(k.to_string()));
        Path(v)
    }
    pub fn idx(&self, i: usize) -> Path {
        let mut v = self.0.clone();
        v.push(Seg::Idx(i));
        Path(v)
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(top level)");
        }
        for (n, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) => {
                    let plain = !k.is_empty()
                        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    if plain {
                        if n > 0 {
                            f.write_str(".")?;
                        }
                        f.write_str(k)?;
                    } else {
                        write!(f, "[{}]", serde_json::Value::String(k.clone()))?;
                    }
                }
                Seg::Idx(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\r' | b'\n') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        if self.peek()? == c {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// Reads a string starting at `"`, decoding escapes.
    fn string(&mut self) -> Option<String> {
        self.ws();
        if self.peek()? != b'"' {
            return None;
        }
        self.i += 1;
        let start = self.i;
        // Fast path: no escapes.
        while self.i < self.b.len() && self.b[self.i] != b'"' && self.b[self.i] != b'\\' {
            self.i += 1;
        }
        if self.peek()? == b'"' {
            let s = std::str::from_utf8(&self.b[start..self.i]).ok()?.to_string();
            self.i += 1;
            return Some(s);
        }
        // Slow path: find the closing quote, then let serde_json decode.
        let mut j = self.i;
        while j < self.b.len() {
            match self.b[j] {
                b'\\' => j += 2,
                b'"' => break,
                _ => j += 1,
            }
        }
        let lit = std::str::from_utf8(self.b.get(start - 1..=j)?).ok()?;
        self.i = j + 1;
        serde_json::from_str::<String>(lit).ok()
    }

    fn skip_value(&mut self) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' => self.members(|_, _, _, _| {}),
            b'[' => self.elements(|_, _| false).map(|_| ()),
            _ => {
                while self.i < self.b.len()
                    && !matches!(self.b[self.i], b',' | b']' | b'}' | b' ' | b'\t' | b'\r' | b'\n')
                {
                    self.i += 1;
                }
                Some(())
            }
        }
    }

    /// Walks an object's members: `f(key, key_offset, value_offset,
    /// value_end)` for each, after its value was skipped.
    fn members(&mut self, mut f: impl FnMut(&str, usize, usize, usize)) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            let key_off = self.i;
            let key = self.string()?;
            self.eat(b':')?;
            self.ws();
            let val_off = self.i;
            self.skip_value()?;
            f(&key, key_off, val_off, self.i);
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Walks an array's elements; `f(index, offset)` returns true to stop there.
    fn elements(&mut self, mut f: impl FnMut(usize, usize) -> bool) -> Option<bool> {
        self.eat(b'[')?;
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(false);
        }
        let mut n = 0;
        loop {
            self.ws();
            if f(n, self.i) {
                return Some(true);
            }
            self.skip_value()?;
            n += 1;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(false);
                }
                _ => return None,
            }
        }
    }
}

/// Byte offset of the member key (for a `Key` step) or element (for an `Idx`
/// step) that `path` names. With duplicate keys the last one wins, as in
/// serde_json.
pub fn locate(src: &str, path: &Path) -> Option<usize> {
    match path.0.last() {
        Some(Seg::Key(k)) => {
            let parent = Path(path.0[..path.0.len() - 1].to_vec());
            let mut sc = Scanner { b: src.as_bytes(), i: locate_value(src, &parent)? };
            let mut found = None;
            sc.members(|key, ko, _, _| {
                if key == k {
                    found = Some(ko);
                }
            })?;
            found
        }
        _ => locate_value(src, path),
    }
}

/// Byte offset of the value at `path`.
pub fn locate_value(src: &str, path: &Path) -> Option<usize> {
    let mut sc = Scanner { b: src.as_bytes(), i: 0 };
    sc.ws();
    let mut here = sc.i;
    for seg in &path.0 {
        sc.i = here;
        let mut found = None;
        match seg {
            Seg::Key(k) => {
                sc.members(|key, _, vo, _| {
                    if key == k {
                        found = Some(vo);
                    }
                })?;
            }
            Seg::Idx(want) => {
                sc.elements(|n, off| {
                    if n == *want {
                        found = Some(off);
                        true
                    } else {
                        false
                    }
                })?;
            }
        }
        here = found?;
    }
    Some(here)
}

/// The keys of the object at `path`, in source order, with their offsets
/// (duplicates included).
pub fn keys(src: &str, path: &Path) -> Option<Vec<(String, usize)>> {
    let mut sc = Scanner { b: src.as_bytes(), i: locate_value(src, path)? };
    let mut out = Vec::new();
    sc.members(|k, ko, _, _| out.push((k.to_string(), ko)))?;
    Some(out)
}

/// One member of an object as it sits in the text.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub key: String,
    /// Offset of the key's opening quote.
    pub key_off: usize,
    /// Offsets of the value's first byte and of the byte after it.
    pub val_off: usize,
    pub val_end: usize,
}

/// An object as it sits in the text: its braces and members in source
/// order (duplicates included), for editing the text in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    /// Offsets of `{` and `}`.
    pub open: usize,
    pub close: usize,
    pub members: Vec<Member>,
}

/// The object at `path`, or `None` when there is none (or it is not an object).
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub fn object(src: &str, path: &Path) -> Option<Object> {
    let open = locate_value(src, path)?;
    let mut sc = Scanner { b: src.as_bytes(), i: open };
    let mut members = Vec::new();
    sc.members(|key, key_off, val_off, val_end| {
        members.push(Member { key: key.to_string(), key_off, val_off, val_end })
    })?;
    Some(Object { open, close: sc.i - 1, members })
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(src: &str, off: usize) -> (usize, usize) {
    let off = off.min(src.len());
    let before = &src.as_bytes()[..off];
    let line = 1 + before.iter().filter(|&&c| c == b'\n').count();
    let line_start = before.iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1);
    let col = 1 + String::from_utf8_lossy(&before[line_start..]).chars().count();
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#"{
  "mcpServers": {
    "b": {"command": "x", "args": ["1", {"k": [2, 3]}, "3"]},
    "a\u0041": {"command": "y"},
    "a": {}
  },
  "separator": "__"
}"#;

    fn p(segs: &[Seg]) -> Path {
        Path(segs.to_vec())
    }
    fn k(s: &str) -> Seg {
        Seg::Key(s.into())
    }

    #[test]
    fn locates_keys_and_elements() {
        let at = |path: Path| locate(SRC, &path).map(|o| line_col(SRC, o));
        assert_eq!(at(p(&[k("mcpServers")])), Some((2, 3)));
        assert_eq!(at(p(&[k("mcpServers"), k("b"), k("args")])), Some((3, 27)));
        assert_eq!(at(p(&[k("mcpServers"), k("b"), k("args"), Seg::Idx(2)])), Some((3, 56)));
        assert_eq!(at(p(&[k("mcpServers"), k("aA"), k("command")])), Some((4, 17)));
        assert_eq!(at(p(&[k("separator")])), Some((7, 3)));
        assert_eq!(at(p(&[k("nope")])), None);
        assert_eq!(at(p(&[k("mcpServers"), k("b"), k("args"), Seg::Idx(9)])), None);
    }

    #[test]
    fn lists_keys_in_order() {
        let ks: Vec<String> =
            keys(SRC, &p(&[k("mcpServers")])).unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(ks, ["b", "aA", "a"]);
        assert_eq!(keys(SRC, &p(&[k("mcpServers"), k("a")])).unwrap(), vec![]);
    }

    #[test]
    fn spans_an_objects_members() {
        let o = object(SRC, &p(&[k("mcpServers")])).unwrap();
        assert_eq!((&SRC[o.open..=o.open], &SRC[o.close..=o.close]), ("{", "}"));
        let spans: Vec<(&str, &str)> = o.members.iter().map(|m| (&SRC[m.key_off..m.val_off], &SRC[m.val_off..m.val_end])).collect();
        assert_eq!(
            spans,
            [
                (r#""b": "#, r#"{"command": "x", "args": ["1", {"k": [2, 3]}, "3"]}"#),
                (r#""a\u0041": "#, r#"{"command": "y"}"#),
                (r#""a": "#, "{}"),
            ]
        );
        assert_eq!(o.members[1].key, "aA");
        let top = object(SRC, &Path::root()).unwrap();
        assert_eq!(&SRC[top.members[1].val_off..top.members[1].val_end], r#""__""#);
        assert_eq!(object(SRC, &p(&[k("separator")])), None);
        assert_eq!(object("{\"n\": 12}", &Path::root()).unwrap().members[0].val_end, 8);
    }

    #[test]
    fn displays_paths() {
        let path = Path::root().key("mcpServers").key("my.server").key("args").idx(1);
        assert_eq!(path.to_string(), r#"mcpServers["my.server"].args[1]"#);
        assert_eq!(Path::root().to_string(), "(top level)");
    }
}
