//! `sayri doctor --fix-apparmor`: installs and loads the AppArmor profile of Sayri's sandbox
//! helper, with the person's consent. Where AppArmor restricts unprivileged user namespaces
//! (Ubuntu 24.04+), the profile lets `sayri-exec` alone create them, so levels 1–2 work and the
//! restriction stays on for every other program — the fix that does not weaken the machine.
//!
//! Nothing is done without consent: the person is shown the file and the command and asked,
//! unless `--yes` is given; without a terminal to ask on, it stops. Root runs the two steps
//! itself; anyone else through `pkexec` (or `sudo` where there is no `pkexec`).

use sayri_sandbox::host_restrictions::{APPARMOR_PROFILE_PATH, apparmor_profile};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the kernel exposes AppArmor when it is enabled.
const APPARMOR_FS: &str = "/sys/kernel/security/apparmor";

/// The sandbox helper next to this `sayri`.
fn exec_helper() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let helper = exe.with_file_name("sayri-exec");
    anyhow::ensure!(
        helper.is_file(),
        "the sandbox helper {} is missing; reinstall Sayri",
        helper.display()
    );
    Ok(helper)
}

fn ask(question: &str) -> anyhow::Result<bool> {
    anyhow::ensure!(
        std::io::stdin().is_terminal(),
        "nothing was changed: there is no terminal to ask for consent on; run `sayri doctor --fix-apparmor --yes` to agree in advance"
    );
    print!("{question} [y/N] ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes" | "Yes"))
}

/// The elevation command for a non-root user: `pkexec`, else `sudo`.
fn elevate() -> Option<&'static str> {
    ["pkexec", "sudo"].into_iter().find(|p| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(p).is_file()))
    })
}

/// Runs `sayri doctor --fix-apparmor [--yes]`; returns the exit code.
pub fn run(yes: bool) -> anyhow::Result<i32> {
    if !Path::new(APPARMOR_FS).is_dir() {
        println!(
            "AppArmor is not enabled on this machine ({APPARMOR_FS} does not exist): it restricts nothing here, so there is nothing to install."
        );
        return Ok(0);
    }
    let helper = exec_helper()?;
    let profile = apparmor_profile(&helper);
    if std::fs::read_to_string(APPARMOR_PROFILE_PATH).is_ok_and(|p| p == profile) {
        println!("{APPARMOR_PROFILE_PATH} is installed; loading it again.");
    }
    println!(
        "This writes {APPARMOR_PROFILE_PATH}, which lets only {} create user namespaces (the \
         sandbox of levels 1-2 is built from them), and loads it with `apparmor_parser -r`. The \
         restriction stays on for every other program. It needs root.\n\n{profile}",
        helper.display()
    );
    if !yes && !ask("Install and load it?")? {
        println!("Nothing was changed.");
        return Ok(1);
    }
    let tmp = tempfile::NamedTempFile::new()?;
    std::fs::write(tmp.path(), &profile)?;
    let script = format!(
        "install -m 644 '{}' '{APPARMOR_PROFILE_PATH}' && apparmor_parser -r -W '{APPARMOR_PROFILE_PATH}'",
        tmp.path().display()
    );
    let status = if nix::unistd::geteuid().is_root() {
        Command::new("sh").args(["-c", &script]).status()?
    } else {
        let Some(how) = elevate() else {
            anyhow::bail!(
                "nothing was changed: neither pkexec nor sudo is installed; as root run: {script}"
            );
        };
        Command::new(how).args(["sh", "-c", &script]).status()?
    };
    if status.success() {
        println!("Loaded. `sayri sandbox check` should now show levels 1-2 as guaranteed.");
        Ok(0)
    } else {
        anyhow::bail!("installing or loading the profile failed ({status}); as root run: {script}")
    }
}

#[cfg(test)]
mod tests {
    use sayri_sandbox::host_restrictions::{PACKAGED_EXEC, apparmor_profile};

    #[test]
    fn the_packaged_profile_is_the_one_the_fix_installs_for_the_packaged_helper() {
        let packaged = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/apparmor/sayri-exec"),
        )
        .unwrap();
        assert_eq!(
            packaged,
            apparmor_profile(std::path::Path::new(PACKAGED_EXEC))
        );
    }
}
