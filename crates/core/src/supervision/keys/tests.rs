//! The pacing of keys and answers, on instants: a 10-second answer is tested in microseconds.

use super::*;

fn ms(n: u64) -> Mono {
    Mono::from_millis(n)
}

fn rows(s: &str) -> Vec<String> {
    s.lines().map(str::to_owned).collect()
}

const PROMPT: &str = "────\n❯ \n────";
const DIALOG: &str = " Bash command\n   echo hi\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n";

fn send(s: &[u8]) -> KeyEffect {
    KeyEffect::Send(s.to_vec())
}

#[test]
fn a_lines_enter_waits_until_the_input_row_shows_it_and_what_follows_waits_behind_it() {
    let mut k = Keys::new(ms(0));
    let empty = || rows(PROMPT);
    assert_eq!(k.type_line(b"hello world".to_vec(), ms(0), &empty), [send(b"hello world")]);
    assert_eq!(k.write(b"more".to_vec(), ms(1), &empty), [], "held behind the Enter");
    assert_eq!(k.next_poll(ms(1)), Some(ms(1).plus(ENTER_POLL)));
    let shown = || rows("────\n❯ hello world\n────");
    assert_eq!(k.poll(ms(10), &shown), [], "not before the pause, even when shown");
    assert_eq!(k.poll(ms(60), &empty), [], "not shown yet");
    assert_eq!(k.poll(ms(60), &shown), [send(b"\r"), send(b"more")]);
    assert_eq!(k.next_poll(ms(60)), None);
}

#[test]
fn a_tui_that_does_not_echo_gets_its_enter_after_the_longest_wait() {
    let mut k = Keys::new(ms(0));
    let blank = || rows(PROMPT);
    k.type_line(b"/exit".to_vec(), ms(0), &blank);
    k.type_line(b"next".to_vec(), ms(1), &blank);
    assert_eq!(k.poll(ms(1_999), &blank), []);
    assert_eq!(k.poll(ms(2_000), &blank), [send(b"\r"), send(b"next")], "the next line waits for its own Enter");
    assert_eq!(k.poll(ms(4_000), &blank), [send(b"\r")]);
}

#[test]
fn an_answer_waits_for_the_dialog_to_settle_then_types_its_keys_and_sees_it_gone() {
    let mut k = Keys::new(ms(0));
    let dialog = || rows(DIALOG);
    k.output(ms(0));
    assert_eq!(k.answer(Answer::Approve, ms(100), &dialog), [], "first seen: settling");
    assert_eq!(k.poll(ms(500), &dialog), [], "not settled yet");
    assert_eq!(k.poll(ms(900), &dialog), [], "settled: its keys are ready");
    assert_eq!(k.poll(ms(925), &dialog), [send(b"1")]);
    assert_eq!(k.poll(ms(950), &dialog), [], "checking that it went");
    let gone = || rows(PROMPT);
    assert_eq!(k.poll(ms(975), &gone), [KeyEffect::Answered(Ok("Yes".into()))]);
    assert_eq!(k.next_poll(ms(975)), None);
}

#[test]
fn an_answer_says_why_it_failed() {
    let quiet = || rows(PROMPT);
    let mut k = Keys::new(ms(0));
    assert_eq!(k.answer(Answer::Approve, ms(1_000), &quiet), [KeyEffect::Answered(Err(AnswerError::NoDialog))]);

    let dialog = || rows(DIALOG);
    let mut k = Keys::new(ms(0));
    k.answer(Answer::Approve, ms(0), &dialog);
    assert_eq!(k.answer(Answer::Deny, ms(1), &dialog), [KeyEffect::Answered(Err(AnswerError::Busy))]);
    k.poll(ms(900), &dialog);
    k.poll(ms(925), &dialog);
    assert_eq!(k.poll(ms(10_000), &dialog), [KeyEffect::Answered(Err(AnswerError::NotTaken))]);

    let mut k = Keys::new(ms(0));
    k.answer(Answer::Option("Maybe".into()), ms(0), &dialog);
    let refused = k.poll(ms(900), &dialog);
    assert!(matches!(&refused[..], [KeyEffect::Answered(Err(AnswerError::NoSuchOption(_)))]), "{refused:?}");

    let mut k = Keys::new(ms(0));
    k.answer(Answer::Approve, ms(0), &dialog);
    assert_eq!(k.process_ended(), [KeyEffect::Answered(Err(AnswerError::Exited))]);
    assert_eq!(AnswerError::Exited.to_string(), "the agent exited before the answer was taken");
}

#[test]
fn a_dialog_that_keeps_changing_never_settles() {
    let mut k = Keys::new(ms(0));
    let dialog = || rows(DIALOG);
    k.answer(Answer::Approve, ms(0), &dialog);
    for t in (100..10_000).step_by(100) {
        k.output(ms(t));
        let other = move || rows(&DIALOG.replace("echo hi", &format!("echo {t}")));
        assert_eq!(k.poll(ms(t), &other), []);
    }
    assert_eq!(k.poll(ms(10_000), &dialog), [KeyEffect::Answered(Err(AnswerError::NeverSettled))]);
}
