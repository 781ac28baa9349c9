//! Handing the supervised sessions to Claude Code's background service at a quit (issue 37
//! §2): each is stopped at its next idle moment (at once when it is idle), then continued
//! by the service through Claude's own verb (`claude --bg --resume <id>`), after which the
//! face quits; the next start finds them as background rows. One that cannot be handed over
//! is recorded as interrupted, so the next start offers it for resume as after a plain quit.
//! The decisions are `mimesis_core::supervision::handover`'s; this runs them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use mimesis_core::ids::SessionId;
use mimesis_core::session::StoreEvent;
use mimesis_core::supervision::AgentKind;
use mimesis_core::supervision::handover::{HandOverProgress, Phase, RowSays, Step, step};
use mimesis_core::supervision::interrupted::{Interrupted, InterruptedBy};
use tokio::sync::broadcast::error::RecvError;

use crate::Mimesis;
use crate::background::{Claude, claude_program};

/// What `--help` said, per program (asked once: node's start takes a second).
static OFFERS: Mutex<Vec<(PathBuf, bool)>> = Mutex::new(Vec::new());

/// One session being handed over.
struct Handing {
    id: SessionId,
    phase: Phase,
    cwd: String,
}

impl Mimesis {
    /// The `claude` the hand-over runs: the supervised sessions' agent when it is Claude
    /// Code, else the one the other verbs run.
    fn hand_over_program(&self) -> PathBuf {
        self.supervisor_now()
            .map(|s| s.agent())
            .filter(|a| {
                a.kind == AgentKind::ClaudeLike
                    && a.program.file_name().is_some_and(|n| n.to_string_lossy().contains("claude"))
            })
            .map(|a| a.program)
            .unwrap_or_else(|| claude_program(self.data_dir()))
    }

    /// Can the supervised sessions be handed to Claude Code's background service (the
    /// installed `claude` continues a session with `--bg --resume`)? Asked once per program.
    pub async fn can_hand_over(&self) -> bool {
        let program = self.hand_over_program();
        if let Some((_, yes)) = OFFERS.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(p, _)| *p == program) {
            return *yes;
        }
        let root = self.roots().first().cloned().unwrap_or_default();
        let claude = Claude::new(program.clone(), &root);
        let yes = tokio::task::spawn_blocking(move || claude.resumes_in_background()).await.unwrap_or(false);
        OFFERS.lock().unwrap_or_else(|e| e.into_inner()).push((program, yes));
        yes
    }

    /// Hands every supervised session that has not ended to Claude Code's background
    /// service, each at its next idle moment; `report` hears how it goes after each change.
    /// Returns when none is left waiting (then the face quits).
    pub async fn hand_over(&self, report: impl Fn(&HandOverProgress)) -> HandOverProgress {
        let mut progress = HandOverProgress::default();
        let Some(sup) = self.supervisor_now() else { return progress };
        let program = self.hand_over_program();
        let mut sup_rx = sup.subscribe();
        let mut rows_rx = self.engine().subscribe();
        let mut handing: Vec<Handing> = sup
            .sessions()
            .into_iter()
            .filter(|(_, s)| s.state != mimesis_core::supervision::SupervisionState::Terminated)
            .map(|(id, s)| Handing { id, phase: Phase::Waiting, cwd: s.cwd })
            .collect();
        let mut statuses: HashMap<SessionId, RowSays> = HashMap::new();
        let mut transcripts: HashMap<SessionId, PathBuf> = HashMap::new();
        self.refresh_rows(&handing, &mut statuses, &mut transcripts).await;
        let mut last = None;
        loop {
            let now: HashMap<SessionId, _> = sup.sessions().into_iter().collect();
            for h in handing.iter_mut().filter(|h| h.phase != Phase::Done) {
                match step(h.phase, now.get(&h.id), statuses.get(&h.id).copied()) {
                    Step::Wait => {}
                    Step::Stop => {
                        // Marked first: should Mimesis end before the service has it (the
                        // user's "quit now", a signal), it is offered for resume; the mark
                        // goes once the service runs it.
                        sup.mark_interrupted(vec![Interrupted {
                            session_id: h.id.clone(),
                            cwd: h.cwd.clone(),
                            at: self.clock().now(),
                            by: InterruptedBy::Quit,
                        }]);
                        // One the supervisor no longer knows has no process to stop.
                        let _ = sup.stop(&h.id);
                        h.phase = Phase::Stopping;
                    }
                    Step::Skip => {
                        h.phase = Phase::Done;
                        progress.ended += 1;
                    }
                    Step::Dispatch => {
                        h.phase = Phase::Done;
                        if transcripts.get(&h.id).is_none_or(|t| !t.is_file()) {
                            // Never given a prompt: no conversation to continue.
                            sup.dismiss_interrupted(vec![h.id.clone()]);
                            progress.ended += 1;
                            continue;
                        }
                        match self.dispatch(&program, &h.id, &h.cwd, &transcripts[&h.id]).await {
                            Ok(()) => {
                                sup.dismiss_interrupted(vec![h.id.clone()]);
                                progress.handed += 1;
                            }
                            Err(e) => {
                                // Its mark stays: offered for resume at the next start.
                                tracing::warn!(session = %h.id, error = %e, "could not hand the session over");
                                progress.failed += 1;
                                progress.errors.push(format!("{}: {e}", &h.id.as_str()[..h.id.as_str().len().min(8)]));
                            }
                        }
                    }
                }
            }
            progress.waiting = handing.iter().filter(|h| h.phase != Phase::Done).count() as u32;
            if last.as_ref() != Some(&progress) {
                report(&progress);
                last = Some(progress.clone());
            }
            if progress.waiting == 0 {
                return progress;
            }
            // The next change of a supervision or a row.
            tokio::select! {
                r = sup_rx.recv() => if matches!(r, Err(RecvError::Closed)) { return progress },
                r = rows_rx.recv() => match r {
                    Ok(env) => match &env.event {
                        StoreEvent::Discovered { session } => {
                            statuses.insert(session.session_id.clone(), RowSays { status: session.status, pending_call: session.has_pending_tool_use });
                            transcripts.insert(session.session_id.clone(), PathBuf::from(&session.transcript_path));
                        }
                        StoreEvent::Updated { session_id, changes } => {
                            if let Some(r) = statuses.get_mut(session_id) {
                                r.status = changes.status.unwrap_or(r.status);
                                r.pending_call = changes.has_pending_tool_use.unwrap_or(r.pending_call);
                            } else if changes.status.is_some() || changes.has_pending_tool_use.is_some() {
                                // Not known yet: the whole row again.
                                self.refresh_rows(&handing, &mut statuses, &mut transcripts).await;
                            }
                            if let Some(t) = &changes.transcript_path {
                                transcripts.insert(session_id.clone(), PathBuf::from(t));
                            }
                        }
                        StoreEvent::Removed { .. } => {}
                    },
                    Err(RecvError::Lagged(_)) => self.refresh_rows(&handing, &mut statuses, &mut transcripts).await,
                    Err(RecvError::Closed) => return progress,
                },
            }
        }
    }

    /// The rows of the sessions being handed over, as the engine has them now.
    async fn refresh_rows(
        &self,
        handing: &[Handing],
        statuses: &mut HashMap<SessionId, RowSays>,
        transcripts: &mut HashMap<SessionId, PathBuf>,
    ) {
        if let Ok(snap) = self.engine().snapshot().await {
            for row in snap.sessions.into_iter().filter(|r| handing.iter().any(|h| h.id == r.session_id)) {
                statuses.insert(
                    row.session_id.clone(),
                    RowSays { status: row.status, pending_call: row.has_pending_tool_use },
                );
                transcripts.insert(row.session_id, PathBuf::from(row.transcript_path));
            }
        }
    }

    /// `claude --bg --resume <id>` in the session's folder, for the config folder its
    /// transcript is in (`<root>/projects/<folder>/<id>.jsonl`).
    async fn dispatch(
        &self,
        program: &Path,
        id: &SessionId,
        cwd: &str,
        transcript: &Path,
    ) -> Result<(), HandoverError> {
        let root = transcript.ancestors().nth(3).ok_or(HandoverError::NoConfigFolder)?.to_owned();
        let claude = Claude::new(program.to_owned(), &root);
        let (id, cwd) = (id.clone(), PathBuf::from(cwd));
        tokio::task::spawn_blocking(move || claude.resume_in_background(&cwd, &id)).await??;
        Ok(())
    }
}

/// Why a session was not handed over to the background service: the sentence is the Display.
#[derive(Debug, thiserror::Error)]
enum HandoverError {
    #[error("its transcript is not in a config folder")]
    NoConfigFolder,
    #[error(transparent)]
    Join(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Control(#[from] crate::background::ControlError),
}
