//! The orb: a round, animated drawing whose colour and motion follow the daemon's state and
//! audio level. Clicking it (or Enter/Space when focused) toggles listening; a right click shows
//! or hides the card. With animations turned off in the desktop settings
//! (`gtk-enable-animations`), it is drawn still.

use crate::view::{LinkState, OrbState};
use gtk::prelude::*;
use gtk::{cairo, glib};
use std::cell::RefCell;
use std::f64::consts::PI;
use std::rc::Rc;

/// What the orb draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrbLook {
    /// Daemon state.
    pub state: OrbState,
    /// 0..1.
    pub level: f32,
    /// Connected to the daemon (or a demo).
    pub online: bool,
    /// A request is running.
    pub busy: bool,
}

impl Default for OrbLook {
    fn default() -> OrbLook {
        OrbLook {
            state: OrbState::Idle,
            level: 0.0,
            online: false,
            busy: false,
        }
    }
}

/// Base colour (r, g, b in 0..1) per state; grey while offline.
pub fn colour(look: &OrbLook) -> (f64, f64, f64) {
    if !look.online {
        return (0.55, 0.56, 0.60);
    }
    match look.state {
        OrbState::Idle if look.busy => (0.96, 0.65, 0.14),
        OrbState::Idle => (0.42, 0.48, 1.0),
        OrbState::Listening => (0.18, 0.80, 0.44),
        OrbState::Activated => (0.0, 0.74, 0.83),
        OrbState::Thinking => (0.96, 0.65, 0.14),
        OrbState::Speaking => (0.91, 0.12, 0.39),
    }
}

/// The orb widget and its drawing state.
#[derive(Clone)]
pub struct Orb {
    /// The drawing area (focusable, accessible role button).
    pub area: gtk::DrawingArea,
    look: Rc<RefCell<OrbLook>>,
    phase: Rc<RefCell<f64>>,
}

impl Orb {
    /// A new orb of `size` pixels; `on_toggle` runs on click/Enter/Space, `on_secondary` on a
    /// right click.
    pub fn new(
        size: i32,
        on_toggle: impl Fn() + 'static,
        on_secondary: impl Fn() + 'static,
    ) -> Orb {
        let area = gtk::DrawingArea::builder()
            .accessible_role(gtk::AccessibleRole::Button)
            .focusable(true)
            .can_focus(true)
            .name("orb")
            .tooltip_text(
                "Sayri — click to start or stop listening; right-click to show or hide the card",
            )
            .build();
        area.add_css_class("orb");
        let orb = Orb {
            area,
            look: Rc::new(RefCell::new(OrbLook::default())),
            phase: Rc::new(RefCell::new(0.0)),
        };
        orb.set_size(size);
        let (look, phase) = (orb.look.clone(), orb.phase.clone());
        orb.area.set_draw_func(move |_, cr, w, h| {
            draw(cr, w, h, &look.borrow(), *phase.borrow());
        });
        let on_toggle = Rc::new(on_toggle);
        let click = gtk::GestureClick::new();
        click.set_button(0);
        let (t, area) = (on_toggle.clone(), orb.area.clone());
        click.connect_released(move |g, _, _, _| {
            area.grab_focus();
            if g.current_button() == 3 {
                on_secondary();
            } else {
                t();
            }
        });
        orb.area.add_controller(click);
        let keys = gtk::EventControllerKey::new();
        keys.connect_key_pressed(move |_, key, _, _| {
            use gtk::gdk::Key;
            if matches!(key, Key::Return | Key::KP_Enter | Key::space) {
                on_toggle();
                glib::Propagation::Stop
            } else {
                glib::Propagation::Proceed
            }
        });
        orb.area.add_controller(keys);
        orb.start_animation();
        orb.update(OrbLook::default(), None);
        orb
    }

    /// Sets the diameter in pixels.
    pub fn set_size(&self, size: i32) {
        self.area.set_content_width(size);
        self.area.set_content_height(size);
    }

    fn start_animation(&self) {
        let phase = self.phase.clone();
        let last: std::cell::Cell<Option<i64>> = std::cell::Cell::new(None);
        self.area.add_tick_callback(move |area, clock| {
            let animate = area.settings().is_gtk_enable_animations();
            let now = clock.frame_time();
            if animate {
                let dt = last.get().map_or(0.0, |l| (now - l) as f64 / 1_000_000.0);
                *phase.borrow_mut() += dt;
                area.queue_draw();
            }
            last.set(Some(now));
            glib::ControlFlow::Continue
        });
    }

    /// The current look.
    pub fn look(&self) -> OrbLook {
        *self.look.borrow()
    }

    /// Redraws for `look`; `link` refines the accessible description.
    pub fn update(&self, look: OrbLook, link: Option<&LinkState>) {
        *self.look.borrow_mut() = look;
        let status = match link {
            Some(LinkState::Reconnecting { .. }) => "reconnecting to the daemon",
            Some(LinkState::Connecting | LinkState::StartingDaemon) => "connecting",
            _ if look.busy && look.state == OrbState::Idle => "working",
            _ => look.state.label(),
        };
        self.area.update_property(&[
            gtk::accessible::Property::Label("Sayri orb"),
            gtk::accessible::Property::Description(&format!(
                "Sayri is {status}. Press Enter to start or stop listening."
            )),
        ]);
        self.area.queue_draw();
    }
}

/// Draws the orb into a `w`×`h` area at animation time `t` seconds.
pub fn draw(cr: &cairo::Context, w: i32, h: i32, look: &OrbLook, t: f64) {
    let (w, h) = (f64::from(w), f64::from(h));
    let (cx, cy) = (w / 2.0, h / 2.0);
    let max_r = w.min(h) / 2.0 - 2.0;
    if max_r <= 4.0 {
        return;
    }
    let (r, g, b) = colour(look);
    let level = f64::from(look.level.clamp(0.0, 1.0));
    let breathe = match look.state {
        OrbState::Idle => 0.03 * (t * 1.2).sin(),
        OrbState::Listening | OrbState::Speaking => 0.05 * (t * 3.0).sin() + 0.12 * level,
        OrbState::Activated => 0.06 * (t * 5.0).sin().abs(),
        OrbState::Thinking => 0.02 * (t * 2.0).sin(),
    };
    let radius = max_r * (0.78 + breathe).clamp(0.5, 0.98);

    // Halo.
    let halo = cairo::RadialGradient::new(cx, cy, radius * 0.6, cx, cy, max_r);
    halo.add_color_stop_rgba(0.0, r, g, b, 0.35);
    halo.add_color_stop_rgba(1.0, r, g, b, 0.0);
    let _ = cr.set_source(&halo);
    cr.arc(cx, cy, max_r, 0.0, 2.0 * PI);
    let _ = cr.fill();

    // Body: lit from the upper left.
    let body = cairo::RadialGradient::new(
        cx - radius * 0.35,
        cy - radius * 0.35,
        radius * 0.1,
        cx,
        cy,
        radius,
    );
    body.add_color_stop_rgb(
        0.0,
        (r + 0.55).min(1.0),
        (g + 0.55).min(1.0),
        (b + 0.55).min(1.0),
    );
    body.add_color_stop_rgb(0.6, r, g, b);
    body.add_color_stop_rgb(1.0, r * 0.55, g * 0.55, b * 0.55);
    let _ = cr.set_source(&body);
    cr.arc(cx, cy, radius, 0.0, 2.0 * PI);
    let _ = cr.fill();

    // Thinking: a turning arc; offline: a dashed ring.
    if !look.online {
        cr.set_source_rgba(1.0, 1.0, 1.0, 0.7);
        cr.set_line_width((radius * 0.06).max(1.5));
        cr.set_dash(&[radius * 0.2, radius * 0.15], t * 10.0);
        cr.arc(cx, cy, radius * 0.82, 0.0, 2.0 * PI);
        let _ = cr.stroke();
        cr.set_dash(&[], 0.0);
    } else if look.state == OrbState::Thinking || look.busy {
        let start = t * 2.5;
        cr.set_source_rgba(1.0, 1.0, 1.0, 0.85);
        cr.set_line_width((radius * 0.08).max(2.0));
        cr.set_line_cap(cairo::LineCap::Round);
        cr.arc(cx, cy, radius * 0.82, start, start + PI * 0.6);
        let _ = cr.stroke();
    }
    // Level ring.
    if level > 0.01 {
        cr.set_source_rgba(1.0, 1.0, 1.0, 0.35 + 0.5 * level);
        cr.set_line_width(2.0);
        cr.arc(cx, cy, radius * (1.0 + 0.12 * level), 0.0, 2.0 * PI);
        let _ = cr.stroke();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_has_its_own_colour_and_offline_is_grey() {
        let states = [
            OrbState::Idle,
            OrbState::Listening,
            OrbState::Activated,
            OrbState::Thinking,
            OrbState::Speaking,
        ];
        let colours: Vec<_> = states
            .iter()
            .map(|s| {
                colour(&OrbLook {
                    state: *s,
                    level: 0.0,
                    online: true,
                    busy: false,
                })
            })
            .collect();
        for (i, a) in colours.iter().enumerate() {
            for b in &colours[i + 1..] {
                assert_ne!(a, b);
            }
        }
        let grey = colour(&OrbLook::default());
        assert!(!colours.contains(&grey));
    }

    #[test]
    fn drawing_paints_the_centre_in_the_state_colour() {
        let mut surface = cairo::ImageSurface::create(cairo::Format::ARgb32, 100, 100).unwrap();
        {
            let cr = cairo::Context::new(&surface).unwrap();
            let look = OrbLook {
                state: OrbState::Listening,
                level: 0.5,
                online: true,
                busy: false,
            };
            draw(&cr, 100, 100, &look, 0.0);
        }
        let stride = surface.stride() as usize;
        let data = surface.data().unwrap();
        // Premultiplied BGRA, little endian; the centre is opaque and green-dominant.
        let px = &data[50 * stride + 50 * 4..50 * stride + 50 * 4 + 4];
        assert_eq!(px[3], 255);
        assert!(px[1] > px[0] && px[1] > px[2], "{px:?}");
        let corner = &data[0..4];
        assert_eq!(corner[3], 0, "outside the circle stays transparent");
    }
}
