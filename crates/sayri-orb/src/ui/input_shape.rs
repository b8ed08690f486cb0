//! Where the orb's window takes pointer input: the round orb and, while it is open, the card —
//! nowhere else. Clicks on the transparent rest of the window (its square corners around the
//! orb, the empty space beside a closed card) go through to the window below.
//!
//! The region is set on the window's surface (GDK makes it the X input shape) after every
//! layout; the circle is approximated by 2-pixel strips.

use gtk::cairo::{RectangleInt, Region};
use gtk::prelude::*;

/// Height of one strip of the circle, logical pixels.
const STRIP: i32 = 2;

/// The strips of a circle inscribed in the `w`×`h` box at `(x, y)`.
pub fn circle(x: i32, y: i32, w: i32, h: i32) -> Vec<RectangleInt> {
    let r = f64::from(w.min(h)) / 2.0;
    let (cx, cy) = (
        f64::from(x) + f64::from(w) / 2.0,
        f64::from(y) + f64::from(h) / 2.0,
    );
    let mut out = Vec::new();
    let mut row = 0;
    while row < h.min(w) {
        let mid = f64::from(row) + f64::from(STRIP) / 2.0 - r;
        let half = (r * r - mid * mid).max(0.0).sqrt();
        let left = (cx - half).round() as i32;
        let right = (cx + half).round() as i32;
        if right > left {
            let top = (cy - r).round() as i32 + row;
            out.push(RectangleInt::new(left, top, right - left, STRIP));
        }
        row += STRIP;
    }
    out
}

/// Sets the input region of `window`: the circle of `orb`, and `card` when it is visible.
pub fn update(window: &gtk::Window, orb: &gtk::Widget, card: &gtk::Widget) {
    let Some(surface) = window.surface() else {
        return;
    };
    let region = Region::create();
    if let Some(b) = orb.compute_bounds(window) {
        for r in circle(
            b.x() as i32,
            b.y() as i32,
            b.width() as i32,
            b.height() as i32,
        ) {
            let _ = region.union_rectangle(&r);
        }
    }
    if card.is_visible()
        && let Some(b) = card.compute_bounds(window)
    {
        let _ = region.union_rectangle(&RectangleInt::new(
            b.x() as i32,
            b.y() as i32,
            b.width().ceil() as i32,
            b.height().ceil() as i32,
        ));
    }
    surface.set_input_region(&region);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_circle_covers_the_centre_and_leaves_the_corners_out() {
        let strips = circle(0, 0, 140, 140);
        let covers = |px: i32, py: i32| {
            strips.iter().any(|r| {
                px >= r.x() && px < r.x() + r.width() && py >= r.y() && py < r.y() + r.height()
            })
        };
        assert!(covers(70, 70));
        assert!(covers(70, 2) && covers(2, 70));
        for (x, y) in [(3, 3), (136, 3), (3, 136), (136, 136)] {
            assert!(!covers(x, y), "corner {x},{y} takes input");
        }
    }
}
