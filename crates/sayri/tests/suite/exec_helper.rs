//! The sandbox's exec helper is the small `sayri-exec` program next to `sayri`: commands run
//! through it, and without it every command is refused with a message naming what to install
//! (the sandbox fails closed, never running anything on the host instead).

use super::support::{BIN, Env, exec_bin, stderr};
use std::process::Command;

#[test]
fn without_the_helper_next_to_sayri_every_command_is_refused_and_says_what_to_install() {
    let env = Env::new_in("/var/tmp");
    let lonely = env.dir.path().join("bin");
    std::fs::create_dir_all(&lonely).unwrap();
    let sayri = lonely.join("sayri");
    std::fs::copy(BIN, &sayri).unwrap();
    let marker = env.dir.path().join("ran");
    for level in ["1", "3"] {
        let out = Command::new(&sayri)
            .env("SAYRI_CONFIG_DIR", env.config_dir())
            .env("SAYRI_STATE_DIR", env.state_dir())
            .env("HOME", env.dir.path())
            .env_remove("XDG_RUNTIME_DIR")
            .args(["sandbox", "run", "--level", level, "--"])
            .arg(format!("touch {}", marker.display()))
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(126),
            "level {level}: {}",
            stderr(&out)
        );
        let msg = stderr(&out);
        assert!(
            msg.contains(&format!("{}", lonely.join("sayri-exec").display()))
                && msg.contains("not installed")
                && msg.contains("did not run"),
            "level {level}: {msg}"
        );
        assert!(
            !marker.exists(),
            "level {level}: the command ran without the helper"
        );
    }

    // With the helper next to it, the same command runs.
    let helper = exec_bin();
    std::fs::copy(&helper, lonely.join("sayri-exec")).unwrap();
    let out = Command::new(&sayri)
        .env("SAYRI_CONFIG_DIR", env.config_dir())
        .env("SAYRI_STATE_DIR", env.state_dir())
        .env("HOME", env.dir.path())
        .env_remove("XDG_RUNTIME_DIR")
        .args(["sandbox", "run", "--level", "3", "--"])
        .arg(format!("touch {}", marker.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(marker.exists());
}
