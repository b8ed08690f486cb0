//! What an attached image must be: one of the formats vision models read, told by its first
//! bytes (never by its file name), and small enough to send.

/// Largest image accepted, in bytes (10 MiB).
pub const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;

/// The media type of an image file from its first bytes: `image/png`, `image/jpeg`,
/// `image/gif` or `image/webp`; `None` for anything else.
pub fn sniff_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Why a file cannot be attached as an image: what is wrong and what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// No bytes.
    #[error("the file is empty")]
    Empty,
    /// More than [`MAX_IMAGE_BYTES`].
    #[error(
        "the image is larger than {} MiB; send a smaller or scaled-down copy",
        MAX_IMAGE_BYTES / (1024 * 1024)
    )]
    TooLarge,
    /// Content of another kind than PNG, JPEG, GIF or WebP.
    #[error("the file is not a PNG, JPEG, GIF or WebP image (judged by its content, not its name)")]
    NotAnImage,
}

/// Checks an image's size and type; `Ok(mime)` or what is wrong and what to do.
///
/// # Errors
/// [`ImageError`]: empty, larger than [`MAX_IMAGE_BYTES`], or not PNG, JPEG, GIF or WebP.
pub fn check_image(bytes: &[u8]) -> Result<&'static str, ImageError> {
    if bytes.is_empty() {
        return Err(ImageError::Empty);
    }
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(ImageError::TooLarge);
    }
    sniff_mime(bytes).ok_or(ImageError::NotAnImage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_told_by_their_content_and_size() {
        assert_eq!(check_image(b"\x89PNG\r\n\x1a\n...."), Ok("image/png"));
        assert_eq!(check_image(&[0xFF, 0xD8, 0xFF, 0xE0]), Ok("image/jpeg"));
        assert_eq!(check_image(b"GIF89a.."), Ok("image/gif"));
        assert_eq!(check_image(b"RIFF\0\0\0\0WEBPVP8 "), Ok("image/webp"));
        assert!(check_image(b"").is_err());
        assert!(check_image(b"-----BEGIN OPENSSH PRIVATE KEY-----").is_err());
        assert!(check_image(b"RIFF\0\0\0\0WAVEfmt ").is_err());
        let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
        big.resize(MAX_IMAGE_BYTES as usize + 1, 0);
        assert!(
            check_image(&big)
                .unwrap_err()
                .to_string()
                .contains("larger than 10 MiB")
        );
    }
}
