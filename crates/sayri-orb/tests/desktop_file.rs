//! The `.desktop` file and the icon shipped with the orb are valid and point at each other.

// Test code: a step that cannot be set up panics, and the panic is the test's report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use gtk::glib;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data");

#[test]
fn desktop_entry_launches_sayri_orb_with_its_icon() {
    let kf = glib::KeyFile::new();
    kf.load_from_file(
        format!("{DATA}/org.sayri.Orb.desktop"),
        glib::KeyFileFlags::NONE,
    )
    .expect("the .desktop file is a valid key file");
    let get = |k: &str| kf.string("Desktop Entry", k).expect(k).to_string();
    assert_eq!(get("Type"), "Application");
    assert_eq!(get("Exec"), "sayri-orb");
    assert_eq!(get("Icon"), "sayri-orb");
    assert_eq!(get("Name"), "Sayri");
}

#[test]
fn icon_is_a_loadable_square_svg() {
    let pixbuf = gtk::gdk_pixbuf::Pixbuf::from_file(format!("{DATA}/sayri-orb.svg"))
        .expect("the SVG icon loads");
    assert_eq!(pixbuf.width(), pixbuf.height());
    assert!(pixbuf.width() >= 48);
}
