//! stream_redaction
