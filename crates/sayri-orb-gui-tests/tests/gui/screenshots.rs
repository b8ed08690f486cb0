//! `sayri-orb --screenshot PATH --demo STATE` (the program's entry point, run as this
//! executable's `orb` role) writes PNGs that are not blank
//! and differ per scene. They are kept under `target/tmp/orb-screenshots/` as test artefacts.

use gtk::gdk;
use gtk::prelude::*;
use std::path::PathBuf;
use std::process::Command;

/// Straight RGBA8 pixels of a PNG file, with its size.
fn pixels(path: &PathBuf) -> (Vec<u8>, usize, usize) {
    let texture = gdk::Texture::from_filename(path)
        .unwrap_or_else(|e| panic!("{} is not a readable image: {e}", path.display()));
    let (w, h) = (texture.width() as usize, texture.height() as usize);
    let mut data = vec![0u8; w * h * 4];
    // `download` writes premultiplied BGRA/ARGB32 in memory order; fine for comparisons.
    texture.download(&mut data, w * 4);
    (data, w, h)
}

pub fn screenshots_of_idle_streaming_and_permission_are_not_blank_and_differ() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("orb-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    let mut shots = Vec::new();
    for scene in ["idle", "streaming", "permission"] {
        let path = dir.join(format!("orb-{scene}.png"));
        let _ = std::fs::remove_file(&path);
        let out = Command::new(std::env::current_exe().expect("test executable"))
            .env(crate::world::ROLE_VAR, "orb")
            .args(["--demo", scene, "--after-ms", "500", "--screenshot"])
            .arg(&path)
            .output()
            .expect("run sayri-orb");
        assert!(
            out.status.success(),
            "sayri-orb --screenshot failed for {scene}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (px, w, h) = pixels(&path);
        assert!(
            w >= 150 && h >= 140,
            "{scene}: {w}x{h} is too small for orb and card"
        );
        let opaque = px.chunks(4).filter(|p| p[3] > 200).count();
        assert!(opaque * 4 > w * h, "{scene}: mostly transparent");
        let mut colours: Vec<[u8; 4]> = px.chunks(4).map(|p| [p[0], p[1], p[2], p[3]]).collect();
        colours.sort_unstable();
        colours.dedup();
        assert!(
            colours.len() > 50,
            "{scene}: only {} colours: blank",
            colours.len()
        );
        shots.push((scene, px, w, h));
    }
    for i in 0..shots.len() {
        for j in i + 1..shots.len() {
            let (a, pa, wa, ha) = &shots[i];
            let (b, pb, wb, hb) = &shots[j];
            if (wa, ha) != (wb, hb) {
                continue;
            }
            let differing = pa
                .chunks(4)
                .zip(pb.chunks(4))
                .filter(|(x, y)| x != y)
                .count();
            assert!(
                differing * 20 > wa * ha,
                "{a} and {b} are nearly identical ({differing} pixels differ)"
            );
        }
    }
}
