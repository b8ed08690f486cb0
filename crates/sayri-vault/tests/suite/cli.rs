//! The CLI: values from stdin or a hidden prompt, never argv; `--reveal` only to a terminal.

use clap::Parser;
use sayri_vault::cli::{Terminal, VaultCommand, run_with};
use zeroize::Zeroizing;

use super::vault_file::paths;

#[derive(Parser)]
struct Top {
    #[command(subcommand)]
    vault: VaultCommand,
}

fn parse(args: &[&str]) -> Result<VaultCommand, clap::Error> {
    Top::try_parse_from(std::iter::once("vault").chain(args.iter().copied())).map(|t| t.vault)
}

/// Runs a command with `input` on stdin; returns (result, stdout, prompts shown).
fn run(
    dir: &tempfile::TempDir,
    args: &[&str],
    input: &str,
    tty: bool,
) -> (Result<(), sayri_vault::VaultError>, String, Vec<String>) {
    let cmd = parse(args).unwrap();
    let mut stdin = std::io::Cursor::new(input.as_bytes().to_vec());
    let mut stdout = Vec::new();
    let mut prompts = Vec::new();
    let typed = input.to_string();
    let mut prompt = |p: &str| {
        prompts.push(p.to_string());
        Ok(typed.clone())
    };
    let mut term = Terminal {
        stdin: &mut stdin,
        stdout: &mut stdout,
        stdin_is_tty: tty,
        stdout_is_tty: tty,
        hidden_prompt: &mut prompt,
        env_passphrase: None,
    };
    let r = run_with(&cmd, &paths(dir), &mut term).map(|_| ());
    drop(term);
    (r, String::from_utf8(stdout).unwrap(), prompts)
}

#[test]
fn value_is_never_an_argument() {
    assert!(parse(&["set", "GITHUB_TOKEN", "ghp_secretvalue"]).is_err());
    assert!(parse(&["set", "GITHUB_TOKEN", "-d", "ci"]).is_ok());
}

#[test]
fn set_confirms_without_any_part_of_the_value_and_list_and_get_show_masks() {
    let dir = tempfile::tempdir().unwrap();
    let (r, out, prompts) = run(
        &dir,
        &["set", "github token", "-d", "ci"],
        "ghp_0123456789qxzjvk\n",
        false,
    );
    r.unwrap();
    assert!(prompts.is_empty());
    let (first, rest) = out.split_once('\n').unwrap();
    assert!(
        first.starts_with("created the vault ") && first.contains(", sealed by the "),
        "a new vault says which key source seals it: {out}"
    );
    assert_eq!(rest, "stored GITHUB_TOKEN (value not shown)\n");
    // No three characters of it occur in the vault's English messages ("default" holds "def").
    let secret = "ghp_0123456789qxzjvk";
    for start in 0..secret.len() - 2 {
        assert!(
            !out.contains(&secret[start..start + 3]),
            "set echoed part of the value: {out}"
        );
    }
    let (r, out, _) = run(&dir, &["list"], "", false);
    r.unwrap();
    assert_eq!(out, "GITHUB_TOKEN\tghp...jvk\tci\n");
    let (r, out, _) = run(&dir, &["get", "GITHUB_TOKEN"], "", false);
    r.unwrap();
    assert!(!out.contains("0123456789"));
    let (r, again, _) = run(
        &dir,
        &["set", "other token"],
        "ghp_fedcba9876543210\n",
        false,
    );
    r.unwrap();
    assert_eq!(again, "stored OTHER_TOKEN (value not shown)\n", "said once");
}

#[test]
fn set_on_a_terminal_uses_the_hidden_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _, prompts) = run(&dir, &["set", "DB_PASS"], "hunter2-long", true);
    r.unwrap();
    assert_eq!(prompts, ["Value for DB_PASS (input hidden): "]);
}

#[test]
fn reveal_only_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    run(&dir, &["set", "K"], "value-to-hide", false).0.unwrap();
    let (r, out, _) = run(&dir, &["get", "K", "--reveal"], "", false);
    let e = r.unwrap_err();
    assert!(e.to_string().contains("only on a terminal"), "{e}");
    assert!(out.is_empty());
    let (r, out, _) = run(&dir, &["get", "K", "--reveal"], "", true);
    r.unwrap();
    assert_eq!(out, "value-to-hide\n");
}

#[test]
fn short_value_and_status_messages() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _, _) = run(&dir, &["set", "PIN"], "123\n", false);
    assert!(r.unwrap_err().to_string().contains("at least 4"));
    let (r, out, _) = run(&dir, &["status"], "", false);
    r.unwrap();
    assert!(out.contains("key source: key file"), "{out}");
    assert!(out.contains("why:"), "{out}");
}

#[test]
fn init_with_a_passphrase_then_open_with_the_env_passphrase() {
    let dir = tempfile::tempdir().unwrap();
    let (r, out, prompts) = run(&dir, &["init", "--passphrase"], "a long passphrase", true);
    r.unwrap();
    assert_eq!(prompts.len(), 2);
    assert!(out.contains("passphrase"), "{out}");
    // Without a passphrase on a pipe: a clear refusal.
    let (r, _, _) = run(&dir, &["list"], "", false);
    assert!(
        r.unwrap_err()
            .to_string()
            .contains("SAYRI_VAULT_PASSPHRASE")
    );
    let cmd = parse(&["list"]).unwrap();
    let mut stdin = std::io::Cursor::new(Vec::new());
    let mut stdout = Vec::new();
    let mut prompt = |_: &str| -> std::io::Result<String> { panic!("no prompt expected") };
    let mut term = Terminal {
        stdin: &mut stdin,
        stdout: &mut stdout,
        stdin_is_tty: false,
        stdout_is_tty: false,
        hidden_prompt: &mut prompt,
        env_passphrase: Some(Zeroizing::new("a long passphrase".into())),
    };
    run_with(&cmd, &paths(&dir), &mut term).unwrap();
}

#[test]
fn reset_asks_first_moves_the_old_vault_aside_and_says_which_key_source_the_new_one_uses() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _, _) = run(&dir, &["set", "OLD_TOKEN"], "old-token-value-1234\n", false);
    r.unwrap();
    let vault = paths(&dir).vault_file;
    let before = std::fs::read(&vault).unwrap();

    let (r, _, _) = run(&dir, &["reset"], "", false);
    let e = r.unwrap_err().to_string();
    assert!(e.contains("--yes") && e.contains("terminal"), "{e}");
    let (r, out, _) = run(&dir, &["reset"], "n\n", true);
    assert!(r.unwrap_err().to_string().contains("nothing changed"));
    assert!(out.contains("moved aside, not deleted"), "{out}");
    assert_eq!(std::fs::read(&vault).unwrap(), before, "answered no");

    let (r, out, _) = run(&dir, &["reset"], "y\n", true);
    r.unwrap();
    assert!(out.contains("key source: key file"), "{out}");
    assert!(out.contains("why:"), "{out}");
    assert!(out.contains("to go back"), "{out}");
    let aside = std::fs::read_dir(vault.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("vault.enc.reset-"))
        .expect("the old vault was moved aside");
    assert_eq!(std::fs::read(&aside).unwrap(), before, "kept byte for byte");
    let (r, out, _) = run(&dir, &["list"], "", false);
    r.unwrap();
    assert!(out.contains("no secrets"), "{out}");
}

#[test]
fn key_needs_exactly_one_place() {
    assert!(parse(&["key"]).is_err());
    assert!(parse(&["key", "--to-keyring", "--to-file"]).is_err());
    assert!(parse(&["key", "--to-file"]).is_ok());
}
