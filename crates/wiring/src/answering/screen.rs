//! Types answers into a screen Mimesis reads but does not own, step by step with the pure
//! machine [`mimesis_core::dialog::Answering`]: read the screen, feed it in, type what it
//! says, wait a little, again, until it says it is done.

use std::time::Duration;

use mimesis_core::clock::Clock;
use mimesis_core::dialog::{Answer, Answering, Step};

/// A screen to answer on.
pub(super) trait Screen {
    /// Its visible rows now; `None` when they cannot be read this time; an error when they
    /// never will be again (the client ended).
    async fn rows(&mut self) -> Result<Option<Vec<String>>, String>;
    /// Types one key; an error says why it could not be.
    async fn send(&mut self, key: &[u8]) -> Result<(), String>;
}

/// Types `answers` in turn (each waits for its dialog, and for it to be gone); the label of
/// the last option chosen, or why not.
pub(super) async fn type_answers(
    screen: &mut impl Screen,
    answers: Vec<Answer>,
    clock: &dyn Clock,
    poll: Duration,
) -> Result<String, String> {
    let mut last = String::new();
    let n = answers.len();
    for (i, answer) in answers.into_iter().enumerate() {
        let mut a = Answering::new(answer, clock.mono());
        last = loop {
            let rows = screen.rows().await?;
            match a.step(rows.as_deref(), clock.mono()) {
                Step::Wait => tokio::time::sleep(poll).await,
                Step::Type(key) => screen.send(&key).await?,
                Step::Done(Ok(label)) => break label,
                Step::Done(Err(e)) if i > 0 => {
                    return Err(format!("{e} (after {i} of {n} answers were taken)"));
                }
                Step::Done(Err(e)) => return Err(e),
            }
        };
    }
    Ok(last)
}
