//! Helpers shared by the fuzz targets.

/// `input` cut into reads: the first byte of `input` seeds the read sizes
/// (1 to 16 bytes, then growing), the rest is the stream. Any split of a
/// stream must decode to the same frames as the whole.
pub fn reads(input: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    let Some((&seed, stream)) = input.split_first() else {
        return (Vec::new(), input);
    };
    let mut out = Vec::new();
    let mut rest = stream;
    let mut step = usize::from(seed % 16) + 1;
    while !rest.is_empty() {
        let n = step.min(rest.len());
        out.push(&rest[..n]);
        rest = &rest[n..];
        step = step % 97 + usize::from(seed >> 4) + 1;
    }
    (out, stream)
}

/// Feeds `reads` in order through `feed` (which returns how many bytes it
/// took) and `drain` (which pulls every ready frame into the output), and
/// checks the decoder's progress promise: once drained, a non-empty input is
/// always at least partly taken. Returns the frames.
pub fn feed_all<D, F>(
    decoder: &mut D,
    reads: &[&[u8]],
    mut feed: impl FnMut(&mut D, &[u8]) -> usize,
    mut drain: impl FnMut(&mut D, &mut Vec<F>),
) -> Vec<F> {
    let mut frames = Vec::new();
    let frames_out = &mut frames;
    for read in reads {
        let mut rest = *read;
        while !rest.is_empty() {
            drain(decoder, frames_out);
            let n = feed(decoder, rest);
            assert!(n <= rest.len(), "fed {} of {} bytes", n, rest.len());
            assert!(n > 0, "a drained decoder took nothing");
            rest = &rest[n..];
        }
    }
    drain(decoder, frames_out);
    frames
}
