//! Redaction: one mechanism that hides every secret, in every searched form, behind `$SECRET:<KEY>`.

mod decoded_views;
mod dump_views;
mod encoded_forms;
mod secret_redactor;
mod shared;
mod stream;
mod url_forms;

pub use secret_redactor::{MARKER_PREFIX, SecretRedactor};
pub use shared::SharedRedactor;
pub use stream::StreamRedactor;
