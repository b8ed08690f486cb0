//! The supervised program that runs a UI plugin: its entry point, run the way every plugin
//! program runs (`crate::plugins::run`: a `.py` file with `python3`, in the plugin's folder),
//! with the graphical session's variables, Sayri's folders and its pid file.

use super::UiPlugin;
use crate::plugins::Runner;
use crate::plugins::run::{self, PYTHON};
use crate::supervisor::ChildSpec;
use sayri_client::paths::Paths;
use std::path::{Path, PathBuf};

/// Variables of the graphical session a UI plugin needs to show a window, passed on from the
/// daemon's environment when set.
pub const SESSION_ENV: &[&str] = &[
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_SESSION_TYPE",
    "XDG_CURRENT_DESKTOP",
    "DBUS_SESSION_BUS_ADDRESS",
    "XAUTHORITY",
];

/// Why a UI plugin cannot be started, with what to do.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// No Python interpreter on `PATH`.
    #[error(
        "cannot start UI plugin {0}: python3 is not on the daemon's PATH; install Python 3 (e.g. `sudo apt install python3`)"
    )]
    NoPython(String),
}

/// `python3` on `PATH` (absolute folders only).
fn python() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(PYTHON))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The spec of `plugin`'s program. `shared_lib` is the shared `lib` folder put on its
/// `PYTHONPATH` (when there is one).
///
/// # Errors
/// A `.py` entry point and no `python3` ([`LaunchError`]).
pub fn spec(
    plugin: &UiPlugin,
    paths: &Paths,
    shared_lib: Option<&Path>,
) -> Result<ChildSpec, LaunchError> {
    if plugin.entrypoint.runner == Runner::Python && python().is_none() {
        return Err(LaunchError::NoPython(plugin.id.clone()));
    }
    let mut spec = run::child_spec(plugin.child_name(), &plugin.plugin, &plugin.entrypoint, &[])
        .env("SAYRI_CONFIG_DIR", paths.config_dir.to_string_lossy())
        .env("SAYRI_STATE_DIR", paths.state_dir.to_string_lossy())
        .pid_file(plugin.pid_file(&paths.state_dir));
    if let Some(lib) = shared_lib {
        spec = spec.env("PYTHONPATH", lib.to_string_lossy());
    }
    for var in SESSION_ENV {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            spec = spec.env(*var, v.to_string_lossy());
        }
    }
    Ok(spec)
}
