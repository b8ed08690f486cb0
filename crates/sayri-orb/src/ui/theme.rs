//! The card's style sheet and the system light/dark preference.
//!
//! The preference is read from the XDG desktop portal (`org.freedesktop.appearance`
//! `color-scheme`: 1 = prefer dark, 2 = prefer light) and followed when it changes; without a
//! portal GTK's own theme setting stays in charge. Colours in the style sheet come from the
//! theme, so the card follows whichever variant is active.

use gtk::gio;
use gtk::glib;
use gtk::prelude::*;

const CSS: &str = r#"
window.sayri-orb { background: transparent; }
.card {
  background: alpha(@theme_bg_color, 0.97);
  color: @theme_fg_color;
  border-radius: 14px;
  border: 1px solid alpha(@theme_fg_color, 0.15);
  padding: 10px;
}
.card .user-bubble {
  background: alpha(@theme_selected_bg_color, 0.18);
  border-radius: 10px;
  padding: 4px 8px;
}
.card .code, .card .step-output {
  font-family: monospace;
  background: alpha(@theme_fg_color, 0.07);
  border-radius: 6px;
  padding: 4px 6px;
}
.card .heading { font-weight: bold; }
.card .quote { font-style: italic; padding-left: 8px; border-left: 3px solid alpha(@theme_fg_color, 0.3); }
.card .error { color: #e01b24; }
.card .banner { background: alpha(#f5a623, 0.2); border-radius: 6px; padding: 4px 8px; }
.card .permission {
  border: 2px solid #f5a623;
  border-radius: 10px;
  padding: 8px;
  background: alpha(#f5a623, 0.08);
}
.card .effect-ask { font-weight: bold; }
.card .effect-deny { color: #e01b24; }
.card .badge {
  background: alpha(@theme_selected_bg_color, 0.25);
  border-radius: 8px;
  padding: 0 6px;
}
"#;

/// Installs the style sheet for `display`.
pub fn install(display: &gtk::gdk::Display) {
    let provider = gtk::CssProvider::new();
    provider.load_from_data(CSS);
    gtk::style_context_add_provider_for_display(
        display,
        &provider,
        gtk::STYLE_PROVIDER_PRIORITY_APPLICATION,
    );
}

/// Whether a portal `color-scheme` value asks for dark (`Some(true)`), light (`Some(false)`),
/// or has no preference (`None`).
pub fn prefers_dark(color_scheme: u32) -> Option<bool> {
    match color_scheme {
        1 => Some(true),
        2 => Some(false),
        _ => None,
    }
}

fn apply(color_scheme: u32) {
    if let (Some(dark), Some(settings)) = (prefers_dark(color_scheme), gtk::Settings::default()) {
        settings.set_gtk_application_prefer_dark_theme(dark);
    }
}

/// The `u` inside the portal's `(v)` / `v` reply (the value may be wrapped once or twice).
fn unwrap_u32(v: &glib::Variant) -> Option<u32> {
    if let Some(u) = v.get::<u32>() {
        return Some(u);
    }
    if let Some(inner) = v.as_variant() {
        return unwrap_u32(&inner);
    }
    if v.is_container() && v.n_children() == 1 {
        return unwrap_u32(&v.child_value(0));
    }
    None
}

/// Reads the portal preference once and follows its changes. Quietly does nothing without a
/// session bus or portal.
pub fn follow_system_preference() {
    glib::spawn_future_local(async {
        let Ok(bus) = gio::bus_get_future(gio::BusType::Session).await else {
            return;
        };
        let reply = bus
            .call_future(
                Some("org.freedesktop.portal.Desktop"),
                "/org/freedesktop/portal/desktop",
                "org.freedesktop.portal.Settings",
                "Read",
                Some(&("org.freedesktop.appearance", "color-scheme").to_variant()),
                None,
                gio::DBusCallFlags::NONE,
                2000,
            )
            .await;
        if let Some(u) = reply.ok().as_ref().and_then(unwrap_u32) {
            apply(u);
        }
        let subscription = bus.subscribe_to_signal(
            Some("org.freedesktop.portal.Desktop"),
            Some("org.freedesktop.portal.Settings"),
            Some("SettingChanged"),
            Some("/org/freedesktop/portal/desktop"),
            None,
            gio::DBusSignalFlags::NONE,
            |signal| {
                let params = signal.parameters;
                let ns = params.child_value(0).get::<String>();
                let key = params.child_value(1).get::<String>();
                if ns.as_deref() == Some("org.freedesktop.appearance")
                    && key.as_deref() == Some("color-scheme")
                    && let Some(u) = unwrap_u32(&params.child_value(2))
                {
                    apply(u);
                }
            },
        );
        // Followed for the whole run: the subscription is never dropped.
        std::mem::forget(subscription);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portal_values_map_to_dark_light_or_no_preference() {
        assert_eq!(prefers_dark(1), Some(true));
        assert_eq!(prefers_dark(2), Some(false));
        assert_eq!(prefers_dark(0), None);
        assert_eq!(prefers_dark(7), None);
    }

    #[test]
    fn portal_reply_values_are_found_however_wrapped() {
        let inner = 1u32.to_variant();
        let once = glib::Variant::from_variant(&inner);
        let twice = glib::Variant::tuple_from_iter([glib::Variant::from_variant(&once)]);
        assert_eq!(unwrap_u32(&inner), Some(1));
        assert_eq!(unwrap_u32(&once), Some(1));
        assert_eq!(unwrap_u32(&twice), Some(1));
        assert_eq!(unwrap_u32(&"x".to_variant()), None);
    }
}
