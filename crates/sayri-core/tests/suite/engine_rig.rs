//! The engine wired to the port fakes of `sayri-testkit`: a scripted model, a recording
//! sandbox, an allow-all (or refuse-all) gate, an in-memory store and a ticking clock.

use sayri_core::assistant::{SayriCore, StaticAgents};
use sayri_core::domain::profile::AgentProfile;
use sayri_core::engine::{AgentEngine, EnginePorts, EngineSettings};
use sayri_core::ports::{NoSecrets, Redactor};
use sayri_testkit::fakes::{
    FixedClock, MemoryStore, ModelReply, RecordingGate, RecordingSandbox, RecordingSink,
    ScriptedModel,
};
use std::sync::Arc;

/// Everything wired together.
pub struct Rig {
    pub model: Arc<ScriptedModel>,
    pub sandbox: Arc<RecordingSandbox>,
    pub gate: Arc<RecordingGate>,
    pub store: Arc<MemoryStore>,
    pub engine: Arc<AgentEngine>,
}

/// An engine whose model answers with `replies`, whose commands print a `df -h` table and
/// exit 0, and whose gate refuses everything when `deny` (else allows everything).
pub fn rig(replies: Vec<ModelReply>, deny: bool) -> Rig {
    rig_redacting(replies, deny, Arc::new(NoSecrets))
}

/// As [`rig`], with `redactor` hiding secrets.
pub fn rig_redacting(replies: Vec<ModelReply>, deny: bool, redactor: Arc<dyn Redactor>) -> Rig {
    let model = ScriptedModel::new(replies);
    let sandbox = RecordingSandbox::new("Filesystem Size Avail\n/dev/sda1 100G 40G");
    let gate = Arc::new(RecordingGate {
        deny,
        ..Default::default()
    });
    let store = Arc::new(MemoryStore::default());
    let settings = EngineSettings {
        model: "test-model".into(),
        generate_titles: false,
        ..EngineSettings::default()
    };
    let engine = Arc::new(AgentEngine::new(
        EnginePorts {
            model: model.clone(),
            sandbox: sandbox.clone(),
            gate: gate.clone(),
            redactor,
            store: store.clone(),
            clock: Arc::new(FixedClock::ticking_from(1000.0)),
            entropy: Arc::new(sayri_testkit::fakes::CountingEntropy::from(0x5eed_0000)),
        },
        settings,
    ));
    Rig {
        model,
        sandbox,
        gate,
        store,
        engine,
    }
}

impl Rig {
    /// A core over this engine with `agents` (plus the built-in `default`, which is active).
    pub fn core(&self, agents: Vec<AgentProfile>, sink: Arc<RecordingSink>) -> SayriCore {
        SayriCore::new(
            self.engine.clone(),
            Arc::new(StaticAgents::new(agents)),
            sink,
            "default",
        )
        .unwrap()
    }
}
