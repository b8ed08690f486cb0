//! Is it the assistant's own voice? Two checks: a wake-word detection heard while the
//! assistant speaks, and a transcript compared with the reply that was spoken.

/// What the voice loop measured around a wake-word detection on the microphone.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct WakeEvidence {
    /// Detector score on the echo-cancelled microphone signal.
    pub mic_score: f32,
    /// Highest score of a second detector run on the playback signal (what the speaker was
    /// sent) over the same stretch of time, or 0 when nothing was playing.
    pub playback_score: f32,
    /// Energy of the echo-cancelled microphone signal over the wake window, relative to the
    /// energy of the playback signal over that window (linear power ratio). Speech of a person
    /// standing at the microphone keeps it high; a residue of the assistant's echo keeps it low.
    pub near_to_far_ratio: f32,
}

/// Below this near/far power ratio the microphone holds nothing but (the residue of) the
/// assistant's echo: −10 dB. Used for speech, which the VAD would otherwise take for a person.
pub const ECHO_ONLY_RATIO: f32 = 0.1;

/// The looser ratio for a wake word heard while the played audio itself held the phrase
/// (−5 dB): with a loud speaker next to the microphone the canceller leaves more residue
/// before it has converged, while a person saying the phrase over the assistant still brings
/// the ratio near 1.
pub const WAKE_ECHO_RATIO: f32 = 0.3;

/// Playback scores above this mean the played audio itself contains the wake phrase.
pub const PLAYBACK_WAKE_SCORE: f32 = 0.3;

/// True when a wake-word detection must be vetoed as the assistant's own voice: the played
/// audio contained the wake phrase at that moment **and** the microphone held little more
/// than its echo. A person saying the wake word over the assistant (barge-in) raises the
/// near/far ratio, so the detection stands.
pub fn wake_is_echo(e: WakeEvidence) -> bool {
    e.playback_score >= PLAYBACK_WAKE_SCORE && e.near_to_far_ratio < WAKE_ECHO_RATIO
}

/// While the assistant speaks, a wake word needs only this share of the configured threshold
/// when the microphone clearly holds more than the echo (near/far ratio at least
/// [`WAKE_ECHO_RATIO`]): the detector scores the person's voice mixed with the residue of the
/// reply lower than the same words in a quiet room.
pub const DOUBLE_TALK_THRESHOLD_SHARE: f32 = 0.8;

/// The wake-word threshold in force: `threshold` (the configured one, 0–1) in a quiet room,
/// lowered to [`DOUBLE_TALK_THRESHOLD_SHARE`] of it while `playing` when the near/far ratio
/// shows a person talking over the assistant. Echo alone keeps the ratio low, so it is held to
/// the full threshold (and to the veto of [`wake_is_echo`]).
pub fn wake_threshold(threshold: f32, playing: bool, near_to_far_ratio: f32) -> f32 {
    if playing && near_to_far_ratio >= WAKE_ECHO_RATIO {
        threshold * DOUBLE_TALK_THRESHOLD_SHARE
    } else {
        threshold
    }
}

/// True when speech the VAD hears while the assistant is playing is only its echo: the
/// echo-cancelled microphone holds less than [`ECHO_ONLY_RATIO`] of the playback's power.
/// A person talking over the assistant keeps the ratio above it.
pub fn speech_is_echo(playing: bool, near_to_far_ratio: f32) -> bool {
    playing && near_to_far_ratio < ECHO_ONLY_RATIO
}

/// The echo rule for transcripts: lowercase both texts, keep only word characters and
/// spaces; the transcript is an echo when, cleaned, it is longer than 3 characters and part of
/// the reply (or the reply, when longer than 3, is part of it).
pub fn is_echo_of_reply(text: &str, reply: &str) -> bool {
    let t = words_only(text);
    let r = words_only(reply);
    (t.len() > 3 && r.contains(&t)) || (r.len() > 3 && t.contains(&r))
}

fn words_only(s: &str) -> String {
    let kept: String = s
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace() || *c == '_')
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcript_inside_the_reply_is_echo() {
        let reply = "My wake phrase is hey jarvis. Say hey jarvis and I will listen.";
        assert!(is_echo_of_reply("say Hey Jarvis, and I will listen", reply));
        assert!(is_echo_of_reply("My wake phrase is", reply));
        assert!(!is_echo_of_reply("what time is it", reply));
        assert!(
            !is_echo_of_reply("is", reply),
            "3 characters or fewer never match"
        );
        assert!(!is_echo_of_reply("anything", ""));
    }

    #[test]
    fn speech_during_playback_counts_only_above_the_echo() {
        assert!(speech_is_echo(true, 0.01));
        assert!(!speech_is_echo(true, 0.5));
        assert!(!speech_is_echo(false, 0.01));
    }

    #[test]
    fn wake_threshold_is_lowered_only_for_a_person_talking_over_playback() {
        assert_eq!(wake_threshold(0.5, false, f32::INFINITY), 0.5);
        assert_eq!(wake_threshold(0.5, true, 0.01), 0.5, "echo alone: full bar");
        assert!((wake_threshold(0.5, true, 0.6) - 0.4).abs() < 1e-6);
        assert!((wake_threshold(0.5, true, WAKE_ECHO_RATIO) - 0.4).abs() < 1e-6);
    }

    #[test]
    fn wake_vetoed_only_when_playback_had_it_and_mic_is_only_echo() {
        let echo = WakeEvidence {
            mic_score: 0.9,
            playback_score: 0.95,
            near_to_far_ratio: 0.01,
        };
        assert!(wake_is_echo(echo));
        let barge_in = WakeEvidence {
            near_to_far_ratio: 0.6,
            ..echo
        };
        assert!(!wake_is_echo(barge_in));
        let quiet_playback = WakeEvidence {
            playback_score: 0.0,
            ..echo
        };
        assert!(!wake_is_echo(quiet_playback));
    }
}
