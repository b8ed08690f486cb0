//! A secret a long output holds exactly where Sayri cuts it (the end of the head it keeps, the
//! start of the tail) is redacted as a whole would be: the pieces on either side of a cut are
//! no longer told apart from ordinary text by whole-secret matching alone, so both the model's
//! next request and a client's `run_command` reply must show the marker, never the pieces.

use super::permission_rig::Peer;
use super::secret_rig::*;
use super::support::*;
use sayri_testkit::FakeLlm;
use serde_json::json;

/// Bytes of output kept before and after the cut when a command prints more than the limit
/// (half of the 64 KiB output limit each).
const KEPT: usize = 32 * 1024;

/// A command printing `A`s, the secret across the head's cut (all but its last character
/// before it), a long run of `B`s, the secret across the tail's cut (all but its first two
/// characters after it), and `C`s.
fn straddling_command(secret_len: usize) -> String {
    format!(
        "head -c {a} /dev/zero | tr '\\0' A; printf %s \"$CANARY_TOKEN\"; \
         head -c 200000 /dev/zero | tr '\\0' B; printf %s \"$CANARY_TOKEN\"; \
         head -c {c} /dev/zero | tr '\\0' C",
        a = KEPT - (secret_len - 1),
        c = KEPT - (secret_len - 2),
    )
}

#[test]
fn a_secret_split_by_the_output_cut_is_redacted_in_the_head_and_the_tail() {
    let env = Env::new();
    let rt = runtime();
    let secret = canary();
    let command = straddling_command(secret.len());
    let llm = rt
        .block_on(FakeLlm::start(scripted(vec![
            run_reply(&command),
            answer_reply("Printed."),
        ])))
        .unwrap();
    write_config(&env, &llm.base_url(), "");
    write_agent(&env, "helper", &["CANARY_TOKEN"]);
    let mut d = start_debug_daemon(&env);
    let set = run_with_stdin(&env, &["vault", "set", "CANARY_TOKEN"], &secret);
    assert_eq!(set.status.code(), Some(0), "{}", stderr(&set));

    // A client's command: the reply's head ends, and its tail starts, with the marker.
    let mut c = Peer::connect(&env, "client");
    let r = c.call(
        "run_command",
        json!({"command": command, "agent_id": "helper"}),
    );
    assert_eq!(r["status"], "success", "{}", r["output"]);
    assert!(
        r["omitted_bytes"].as_u64().unwrap_or(0) > 0,
        "the output was cut"
    );
    let head = r["output"].as_str().unwrap();
    let tail = r["output_tail"].as_str().unwrap();
    assert!(
        head.ends_with("A$SECRET:CANARY_TOKEN"),
        "head ends with {:?}",
        &head[head.len().saturating_sub(60)..]
    );
    assert!(
        tail.starts_with("$SECRET:CANARY_TOKENC"),
        "tail starts with {:?}",
        &tail[..60.min(tail.len())]
    );
    assert!(leaks(r.to_string().as_bytes(), &secret).is_empty());

    // The model's turn: the observation (cut again to its budget) holds no piece of the secret.
    let o = ask(&env, &["--agent", "helper", "--new", "print it"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let bodies = bodies(&llm.requests());
    let after = bodies
        .iter()
        .find(|b| b.contains("AAAAAAAA") && b.contains("CCCCCCCC"))
        .expect("the observation (its head and tail) reached the model");
    assert!(
        leaks(after.as_bytes(), &secret).is_empty(),
        "a piece of the secret reached the model"
    );
    quit_daemon(&env, &mut d);
    drop(rt);
}
