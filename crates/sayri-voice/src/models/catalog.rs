//! Models Sayri knows where to download, with the sha256 every download is checked against.
//!
//! Only files whose sha256 is known are listed: a download from anywhere else needs the URL
//! **and** the sha256 (`sayri models download KIND NAME --url URL --sha256 HEX`), so nothing
//! unverified is ever installed. The whisper.cpp ggml models below are the files of
//! <https://huggingface.co/ggerganov/whisper.cpp> (MIT); their sha256 were checked against
//! independent published copies.

use super::ModelKind;

/// A model of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogEntry {
    /// Its kind.
    pub kind: ModelKind,
    /// Its name in the store (`tiny.en`).
    pub name: &'static str,
    /// Where it is downloaded from.
    pub url: &'static str,
    /// The sha256 of the file, lowercase hex.
    pub sha256: &'static str,
    /// Approximate size, megabytes (for listings).
    pub megabytes: u32,
    /// Its licence.
    pub licence: &'static str,
}

macro_rules! whisper {
    ($($name:literal, $mb:literal, $sha:literal;)*) => {
        &[$(CatalogEntry {
            kind: ModelKind::Whisper,
            name: $name,
            url: concat!("https://huggingface.co/ggerganov/whisper.cpp/resolve/main/ggml-", $name, ".bin"),
            sha256: $sha,
            megabytes: $mb,
            licence: "MIT",
        },)*]
    };
}

/// Every downloadable model.
pub const CATALOG: &[CatalogEntry] = whisper! {
    "tiny", 75, "be07e048e1e599ad46341c8d2a135645097a538221678b7acdd1b1919c6e1b21";
    "tiny.en", 75, "921e4cf8686fdd993dcd081a5da5b6c365bfde1162e72b08d75ac75289920b1f";
    "base", 142, "60ed5bc3dd14eea856493d334349b405782ddcaf0028d4b5df4088345fba2efe";
    "base.en", 142, "a03779c86df3323075f5e796cb2ce5029f00ec8869eee3fdfb897afe36c6d002";
    "small", 466, "1be3a9b2063867b937e64e2ec7483364a79917e157fa98c5d94b5c1fffea987b";
    "small.en", 466, "c6138d6d58ecc8322097e0f987c32f1be8bb0a18532a3f88f734d1bbf9c41e5d";
    "medium", 1533, "6c14d5adee5f86394037b4e4e8b59f1673b6cee10e3cf0b11bbdbee79c156208";
    "medium.en", 1533, "cc37e93478338ec7700281a7ac30a10128929eb8f427dda2e865faa8f6da4356";
    "large-v3", 3095, "64d182b440b98d5203c4f9bd541544d84c605196c4f7b845dfa11fb23594d1e2";
    "large-v3-turbo", 1624, "1fc70f774d38eb169993ac391eea357ef47c88757ef72ee5943879b7e8e2bc69";
};

/// Where to find models that are not in the catalog, per kind (for listings and errors).
pub fn sources(kind: ModelKind) -> &'static str {
    match kind {
        ModelKind::Whisper => {
            "https://huggingface.co/ggerganov/whisper.cpp (ggml), or a faster-whisper model directory with `sayri models import-ct2 DIR`"
        }
        ModelKind::PiperVoice => {
            "https://huggingface.co/rhasspy/piper-voices (the .onnx and its .onnx.json; each file page shows its SHA256)"
        }
        ModelKind::WakeWord => {
            "openWakeWord models (https://github.com/dscripka/openWakeWord releases; the stock models are CC BY-NC-SA 4.0: non-commercial use only)"
        }
        ModelKind::Vad => "Silero VAD (PyPI silero-vad; ./scripts/setup --voice installs it)",
    }
}

/// The catalog entry for model `name` of `kind`.
pub fn lookup(kind: ModelKind, name: &str) -> Option<&'static CatalogEntry> {
    CATALOG.iter().find(|e| e.kind == kind && e.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_entries_are_well_formed() {
        for e in CATALOG {
            assert_eq!(e.sha256.len(), 64, "{}", e.name);
            assert!(
                e.sha256
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            );
            assert!(e.url.starts_with("https://") && e.url.ends_with(".bin"));
        }
        assert_eq!(
            lookup(ModelKind::Whisper, "tiny.en").map(|e| e.url),
            Some("https://huggingface.co/ggerganov/whisper.cpp/resolve/main/ggml-tiny.en.bin")
        );
        assert!(lookup(ModelKind::PiperVoice, "tiny.en").is_none());
    }
}
