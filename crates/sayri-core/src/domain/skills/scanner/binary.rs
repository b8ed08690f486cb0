//! Telling text from binaries: text is read whole; media (images, fonts, audio, PDF) is data
//! nobody runs; archives inside a skill are refused; executables, bytecode and unknown binary
//! data are opaque — reported, with their printable strings scanned line by line.

use super::{Collector, Labels, code};

/// What a file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// UTF-8 (or UTF-16 with a byte-order mark) text.
    Text(String),
    /// Images, fonts, audio, video, PDF.
    Media,
    /// An archive (what kind).
    Archive(&'static str),
    /// Compiled code or bytecode (what kind).
    Executable(&'static str),
    /// Other binary data.
    Data(&'static str),
}

/// Classifies `bytes` (named `path`).
pub fn classify(path: &str, bytes: &[u8]) -> Class {
    let lower = path.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let starts = |m: &[u8]| bytes.starts_with(m);
    if let Some(kind) = archive_kind(bytes, ext) {
        return Class::Archive(kind);
    }
    if starts(b"\x7fELF") {
        return Class::Executable("ELF executable or library");
    }
    if starts(b"MZ") && std::str::from_utf8(bytes).is_err() {
        return Class::Executable("Windows executable");
    }
    if starts(&[0xfe, 0xed, 0xfa, 0xce])
        || starts(&[0xfe, 0xed, 0xfa, 0xcf])
        || starts(&[0xcf, 0xfa, 0xed, 0xfe])
        || starts(&[0xce, 0xfa, 0xed, 0xfe])
    {
        return Class::Executable("Mach-O executable");
    }
    if starts(&[0xca, 0xfe, 0xba, 0xbe]) {
        return Class::Executable("Java class file or fat binary");
    }
    if starts(b"\0asm") {
        return Class::Executable("WebAssembly module");
    }
    if matches!(ext, "pyc" | "pyo")
        || (bytes.len() > 4 && bytes[2..4] == [0x0d, 0x0a] && ext == "pyc")
    {
        return Class::Executable("Python bytecode");
    }
    if matches!(
        ext,
        "so" | "dll" | "dylib" | "exe" | "class" | "jar" | "node" | "o" | "a"
    ) {
        return Class::Executable("compiled code (by its file name)");
    }
    if is_media(bytes, ext) {
        return Class::Media;
    }
    if let Some(t) = text(bytes) {
        return Class::Text(t);
    }
    Class::Data("binary data")
}

fn archive_kind(bytes: &[u8], ext: &str) -> Option<&'static str> {
    let starts = |m: &[u8]| bytes.starts_with(m);
    let office = matches!(
        ext,
        "docx" | "xlsx" | "pptx" | "odt" | "ods" | "odp" | "epub"
    );
    if starts(b"PK\x03\x04") || starts(b"PK\x05\x06") {
        return (!office).then_some("zip archive");
    }
    if starts(&[0x1f, 0x8b]) {
        return Some("gzip archive");
    }
    if starts(b"BZh") && ext != "txt" && ext != "md" {
        return Some("bzip2 archive");
    }
    if starts(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        return Some("xz archive");
    }
    if starts(&[b'7', b'z', 0xbc, 0xaf, 0x27, 0x1c]) {
        return Some("7z archive");
    }
    if starts(b"Rar!") {
        return Some("rar archive");
    }
    if starts(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return Some("zstd archive");
    }
    if bytes.len() > 262 && &bytes[257..262] == b"ustar" {
        return Some("tar archive");
    }
    if matches!(
        ext,
        "zip"
            | "tar"
            | "tgz"
            | "gz"
            | "bz2"
            | "xz"
            | "7z"
            | "rar"
            | "zst"
            | "whl"
            | "egg"
            | "apk"
            | "deb"
            | "rpm"
    ) {
        return Some("archive (by its file name)");
    }
    None
}

fn is_media(bytes: &[u8], ext: &str) -> bool {
    let starts = |m: &[u8]| bytes.starts_with(m);
    starts(b"\x89PNG")
        || starts(&[0xff, 0xd8, 0xff])
        || starts(b"GIF8")
        || (starts(b"RIFF")
            && bytes.len() > 12
            && (&bytes[8..12] == b"WEBP" || &bytes[8..12] == b"WAVE"))
        || starts(b"%PDF")
        || starts(b"OTTO")
        || starts(b"wOFF")
        || starts(b"wOF2")
        || starts(&[0, 1, 0, 0])
        || starts(b"ID3")
        || starts(b"OggS")
        || starts(b"fLaC")
        || starts(&[0, 0, 1, 0])
        || (ext == "ico" || ext == "bmp" || ext == "mp3" || ext == "mp4" || ext == "webm")
}

/// Text in UTF-8 without NUL bytes, or UTF-16 with a byte-order mark.
fn text(bytes: &[u8]) -> Option<String> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return (!s.contains('\0')).then(|| s.to_string());
    }
    let utf16 = |le: bool| {
        let units: Vec<u16> = bytes[2..]
            .chunks_exact(2)
            .map(|c| {
                if le {
                    u16::from_le_bytes([c[0], c[1]])
                } else {
                    u16::from_be_bytes([c[0], c[1]])
                }
            })
            .collect();
        String::from_utf16(&units).ok()
    };
    if bytes.starts_with(&[0xff, 0xfe]) {
        return utf16(true);
    }
    if bytes.starts_with(&[0xfe, 0xff]) {
        return utf16(false);
    }
    None
}

/// Scans the printable ASCII strings (6 characters or more) of a binary with the line rules.
pub fn scan_strings(path: &str, bytes: &[u8], c: &mut Collector) {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for &b in bytes {
        if (0x20..0x7f).contains(&b) || b == b'\t' {
            cur.push(b as char);
        } else {
            if cur.len() >= 6 {
                lines.push(std::mem::take(&mut cur));
            }
            cur.clear();
        }
    }
    if cur.len() >= 6 {
        lines.push(cur);
    }
    let label = format!("{path} (strings)");
    let labels = Labels {
        path: &label,
        frontmatter_end: 1,
    };
    code::scan_lines_only(&labels, &lines, c);
}
