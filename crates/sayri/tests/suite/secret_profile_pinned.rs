//! The secrets a command holds come from the agent profile its turn runs with, not from the
//! agent's file at the moment the command starts: the engine puts the profile's
//! `allowed_secrets` into the execution request and the sandbox adapter never re-reads the
//! profile. An agent file edited mid-turn therefore changes nothing for the running turn; the
//! next turn loads the file the normal way and gets the new list.

use super::secret_rig::*;
use super::support::*;
use sayri_testkit::{RecordedRequest, Reply, Script, sse};
use serde_json::json;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// `$CONFIG/agents/keeper.json` at level 3 with `allowed` secrets.
fn keeper_profile(allowed: &[&str]) -> String {
    json!({
        "id": "keeper", "name": "Keeper",
        "sandbox": {"level": "LEVEL_3_HOST_USER", "ask_before_run": false, "timeout_seconds": 20},
        "allowed_secrets": allowed,
    })
    .to_string()
}

/// The model: turn 1 runs two commands, and before answering the first command's observation
/// (so between the two commands) it rewrites the agent file without the secret; turn 2 runs
/// one command. Each command prints how long `$PINNED_TOKEN` is (0 when it is not set).
fn script(agent_file: PathBuf) -> Script {
    let step = Arc::new(Mutex::new(0usize));
    Script::from_fn(move |req: &RecordedRequest| {
        if req
            .json()
            .is_some_and(|v| v.get("max_tokens") == Some(&json!(15)))
        {
            return Reply::sse(sse::content_stream(&["Pinned"]));
        }
        let mut n = step.lock().unwrap();
        *n += 1;
        match *n {
            1 => run_reply("echo first ${#PINNED_TOKEN}"),
            2 => {
                std::fs::write(&agent_file, keeper_profile(&[])).unwrap();
                run_reply("echo second ${#PINNED_TOKEN}")
            }
            3 => answer_reply("Turn one done."),
            4 => run_reply("echo third ${#PINNED_TOKEN}"),
            _ => answer_reply("Turn two done."),
        }
    })
}

#[test]
fn an_agent_file_edited_mid_turn_changes_the_secrets_of_the_next_turn_not_the_running_one() {
    let env = Env::new();
    let secret = canary();
    let rt = runtime();
    let dir = env.config_dir().join("agents");
    std::fs::create_dir_all(&dir).unwrap();
    let agent_file = dir.join("keeper.json");
    std::fs::write(&agent_file, keeper_profile(&["PINNED_TOKEN"])).unwrap();
    let llm = rt
        .block_on(sayri_testkit::FakeLlm::start(script(agent_file.clone())))
        .unwrap();
    write_config(&env, &llm.base_url(), "");
    let mut d = start_debug_daemon(&env);
    let set = run_with_stdin(&env, &["vault", "set", "PINNED_TOKEN"], &secret);
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));
    let listener = Listener::connect(&env.socket());

    let one = ask(&env, &["--agent", "keeper", "--new", "use the token twice"]);
    assert!(stdout(&one).contains("Turn one done."), "{}", stderr(&one));
    assert!(
        std::fs::read_to_string(&agent_file)
            .unwrap()
            .contains("\"allowed_secrets\":[]"),
        "the file was edited during turn one"
    );
    let two = ask(&env, &["--agent", "keeper", "--new", "use the token again"]);
    assert!(stdout(&two).contains("Turn two done."), "{}", stderr(&two));
    quit_daemon(&env, &mut d);

    let outputs: Vec<String> = events(&listener.finish(), "tool_finish")
        .iter()
        .map(|f| f["output"].as_str().unwrap_or_default().trim().to_string())
        .collect();
    let n = secret.len();
    let want = [
        format!("first {n}"),
        // The file lost the secret before this command; the running turn's profile did not.
        format!("second {n}"),
        // The next turn loaded the edited file.
        "third 0".to_string(),
    ];
    assert_eq!(outputs.len(), want.len(), "{outputs:?}\n{}", d.log_text());
    for (got, want) in outputs.iter().zip(&want) {
        assert!(
            got.lines().any(|l| l.trim() == want),
            "wanted {want:?}, the command printed {got:?} (all: {outputs:?})"
        );
    }
    drop(rt);
}
