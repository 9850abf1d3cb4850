//! Content blocks and fixture payloads, shaped for the negotiated revision.

use mcpx_core::revision::{Feature, Revision};

use super::wire::base64;
use serde_json::{json, Value};

/// A 1×1 PNG (a single opaque red pixel).
pub const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// A tiny valid WAV file: 8 kHz, 8-bit mono, 16 samples of a square wave.
pub fn wav_bytes() -> Vec<u8> {
    let samples: Vec<u8> = (0..16)
        .map(|i| if i % 4 < 2 { 0xC0 } else { 0x40 })
        .collect();
    let mut w = Vec::with_capacity(44 + samples.len());
    w.extend_from_slice(b"RIFF");
    w.extend_from_slice(&(36 + samples.len() as u32).to_le_bytes());
    w.extend_from_slice(b"WAVEfmt ");
    w.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    w.extend_from_slice(&1u16.to_le_bytes()); // PCM
    w.extend_from_slice(&1u16.to_le_bytes()); // mono
    w.extend_from_slice(&8000u32.to_le_bytes()); // sample rate
    w.extend_from_slice(&8000u32.to_le_bytes()); // byte rate
    w.extend_from_slice(&1u16.to_le_bytes()); // block align
    w.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    w.extend_from_slice(b"data");
    w.extend_from_slice(&(samples.len() as u32).to_le_bytes());
    w.extend_from_slice(&samples);
    w
}

pub fn wav_base64() -> String {
    base64(&wav_bytes())
}

pub fn text(s: impl Into<String>) -> Value {
    json!({"type": "text", "text": s.into()})
}

pub fn image_png() -> Value {
    json!({"type": "image", "data": PNG_1X1, "mimeType": "image/png"})
}

/// Audio content exists from 2025-03-26; older revisions get a text stand-in.
pub fn audio_wav(rev: Revision) -> Value {
    if !rev.supports(Feature::AudioContent) {
        text("[audio/wav content is not available in protocol revision 2024-11-05]")
    } else {
        json!({"type": "audio", "data": wav_base64(), "mimeType": "audio/wav"})
    }
}

pub fn embedded_text(uri: &str, mime: &str, body: &str) -> Value {
    json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime, "text": body}})
}

/// `resource_link` exists from 2025-06-18; older revisions get a text mention.
pub fn resource_link(rev: Revision, uri: &str, name: &str, mime: &str, description: &str) -> Value {
    if !rev.supports(Feature::ResourceLink) {
        text(format!("Resource: {uri} ({name}, {mime})"))
    } else {
        json!({"type": "resource_link", "uri": uri, "name": name, "mimeType": mime, "description": description})
    }
}

/// A plain tool result with the given content.
pub fn tool_result(content: Vec<Value>) -> Value {
    json!({ "content": content })
}

pub fn tool_text(s: impl Into<String>) -> Value {
    tool_result(vec![text(s)])
}

/// A tool execution error (a result with `isError: true`, not a JSON-RPC error).
pub fn tool_error(s: impl Into<String>) -> Value {
    json!({"content": [text(s)], "isError": true})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::example::wire::base64_decode;

    #[test]
    fn png_decodes_to_png() {
        let b = base64_decode(PNG_1X1).unwrap();
        assert_eq!(&b[1..4], b"PNG");
    }

    #[test]
    fn wav_header() {
        let b = wav_bytes();
        assert_eq!(&b[0..4], b"RIFF");
        assert_eq!(
            u32::from_le_bytes(b[4..8].try_into().unwrap()) as usize,
            b.len() - 8
        );
    }

    #[test]
    fn shaping() {
        assert_eq!(audio_wav(Revision::V2024_11_05)["type"], "text");
        assert_eq!(audio_wav(Revision::V2025_03_26)["type"], "audio");
        assert_eq!(
            resource_link(Revision::V2025_03_26, "a://b", "b", "text/plain", "d")["type"],
            "text"
        );
        assert_eq!(
            resource_link(Revision::V2025_06_18, "a://b", "b", "text/plain", "d")["type"],
            "resource_link"
        );
    }
}
