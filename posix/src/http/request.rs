//! A request head as a connection read it: its bytes copied once into a
//! buffer the connection reuses, and the spans of its parts.

use mcpx_core::frame::http::{trim_ows, BodyFraming, RequestHead, Version};

/// A span of [`Request::head`].
type Span = std::ops::Range<usize>;

/// A request head: its bytes, copied once out of the connection's buffer
/// (which the body is read into next) into a buffer the connection reuses,
/// with field names lowercased in place, and the spans of its parts.
pub(crate) struct Request {
    head: Vec<u8>,
    method: Span,
    /// Path without the query.
    path: Span,
    query: Span,
    fields: Vec<(Span, Span)>,
    pub version: Version,
    pub keep_alive: bool,
    pub framing: BodyFraming,
    pub body_read: bool,
    /// The body, read already (a request carried by the hop, whose MAC
    /// covers it): what the connection's next body read gives.
    preread: Option<Vec<u8>>,
}

/// Where `part` (a slice of `base`) lies in it.
fn span_of(base: &[u8], part: &[u8]) -> Span {
    let at = (part.as_ptr() as usize).wrapping_sub(base.as_ptr() as usize);
    match at.checked_add(part.len()) {
        Some(end) if end <= base.len() => at..end,
        _ => 0..0,
    }
}

impl Request {
    /// Copies `head` (parsed from `raw`) into the buffers `spare` gives
    /// (those of the connection's last request, else new ones).
    pub fn new<const H: usize>(raw: &[u8], head: &RequestHead<'_, H>, framing: BodyFraming, spare: Option<Request>) -> Request {
        let (mut bytes, mut fields) = spare.map_or_else(Default::default, |r| (r.head, r.fields));
        bytes.clear();
        fields.clear();
        let end = head.headers.iter().map(|h| span_of(raw, h.value).end).fold(span_of(raw, head.path.as_bytes()).end, usize::max);
        bytes.extend_from_slice(&raw[..end]);
        fields.extend(head.headers.iter().map(|h| (span_of(raw, h.name.as_bytes()), span_of(raw, h.value))));
        for (name, _) in &fields {
            bytes[name.clone()].make_ascii_lowercase();
        }
        let target = span_of(raw, head.path.as_bytes());
        let (path, query) = match head.path.find('?') {
            Some(q) => (target.start..target.start + q, target.start + q + 1..target.end),
            None => (target.clone(), target.end..target.end),
        };
        Request {
            head: bytes,
            method: span_of(raw, head.method.as_bytes()),
            path,
            query,
            fields,
            version: head.version,
            keep_alive: head.keep_alive(),
            framing,
            body_read: false,
            preread: None,
        }
    }

    /// The text of a span of the request line (ASCII: httparse checked it).
    fn text(&self, span: &Span) -> &str {
        std::str::from_utf8(&self.head[span.clone()]).unwrap_or("")
    }

    pub fn method(&self) -> &str {
        self.text(&self.method)
    }

    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.text(&self.path)
    }

    /// The query (after `?`), or "".
    pub fn query(&self) -> &str {
        self.text(&self.query)
    }

    /// Every field named `name` (lowercase), in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.fields
            .iter()
            .filter(move |(n, _)| &self.head[n.clone()] == name.as_bytes())
            .map(|(_, v)| &self.head[v.clone()])
    }

    /// Every field line as (name in lowercase, value), in order.
    pub fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.fields.iter().map(|(n, v)| (&self.head[n.clone()], &self.head[v.clone()]))
    }

    /// The first field named `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        let (_, v) = self.fields.iter().find(|(n, _)| &self.head[n.clone()] == name.as_bytes())?;
        Some(&self.head[v.clone()])
    }

    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// Does the (comma-separated) header list contain a media type starting with `ty`?
    pub fn accepts(&self, ty: &str) -> bool {
        let ty = ty.as_bytes();
        self.all("accept").flat_map(|v| v.split(|&b| b == b',')).any(|e| {
            let e = trim_ows(e.split(|&b| b == b';').next().unwrap_or(b""));
            e.eq_ignore_ascii_case(ty)
                || e == b"*/*"
                || (e.ends_with(b"/*") && ty.len() >= e.len() - 1 && ty[..e.len() - 1].eq_ignore_ascii_case(&e[..e.len() - 1]))
        })
    }

    /// How many field lines named `name` (lowercase) the head has.
    pub fn header_count(&self, name: &str) -> usize {
        self.all(name).count()
    }

    pub fn headers_present(&self, name: &str) -> bool {
        self.header(name).is_some()
    }

    /// Makes this the request `method target` with the body already read
    /// (`cluster_hop`: the client's request another replica passed on).
    pub fn carry(&mut self, method: &str, target: &str, body: Vec<u8>) {
        let at = self.head.len();
        self.head.extend_from_slice(method.as_bytes());
        self.method = at..self.head.len();
        let t = self.head.len();
        self.head.extend_from_slice(target.as_bytes());
        let end = self.head.len();
        (self.path, self.query) = match target.find('?') {
            Some(q) => (t..t + q, t + q + 1..end),
            None => (t..end, end..end),
        };
        self.put_back(body);
    }

    /// The body, once read, is the request's again: what the next
    /// body read gives.
    pub fn put_back(&mut self, body: Vec<u8>) {
        self.preread = Some(body);
    }

    /// The body put back, if any (taken: it is read once).
    pub fn take_preread(&mut self) -> Option<Vec<u8>> {
        self.preread.take()
    }

    pub fn has_body(&self) -> bool {
        !matches!(self.framing, BodyFraming::None | BodyFraming::Length(0))
    }
}
