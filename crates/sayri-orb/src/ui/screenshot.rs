//! Rendering the window into a PNG (GTK's own renderer, the same pixels the screen gets).

use gtk::prelude::*;
use std::path::Path;

/// Errors taking a screenshot.
#[derive(Debug, thiserror::Error)]
pub enum ScreenshotError {
    /// The window is not on screen (no size or renderer yet).
    #[error("the window is not shown yet, so there is nothing to capture")]
    NotShown,
    /// Writing the file failed.
    #[error("cannot write the screenshot {path}: {message}")]
    Write {
        /// Target file.
        path: String,
        /// Why.
        message: String,
    },
}

/// Renders `window` as it is now into the PNG file `path`.
pub fn capture(window: &gtk::Window, path: &Path) -> Result<(), ScreenshotError> {
    let (w, h) = (window.width(), window.height());
    if w <= 0 || h <= 0 {
        return Err(ScreenshotError::NotShown);
    }
    let renderer = window.renderer().ok_or(ScreenshotError::NotShown)?;
    let paintable = gtk::WidgetPaintable::new(Some(window));
    let snapshot = gtk::Snapshot::new();
    paintable.snapshot(&snapshot, f64::from(w), f64::from(h));
    let node = snapshot.to_node().ok_or(ScreenshotError::NotShown)?;
    let bounds = gtk::graphene::Rect::new(0.0, 0.0, w as f32, h as f32);
    let texture = renderer.render_texture(&node, Some(&bounds));
    let png = texture.save_to_png_bytes();
    std::fs::write(path, &png).map_err(|e| ScreenshotError::Write {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}
