//! The tray icon (SPEC U5): the number of sessions that need the user (waiting for approval
//! or input, crashed, terminated) drawn onto the icon, so it shows on trays that have no
//! title text, and repeated in the tooltip and title; a menu listing those sessions (a click
//! opens one), "Show Mimesis" and "Quit Mimesis".
//!
//! The set comes from the engine's attention policy; the menu's words come from the roster.
//! Goals and titles are transcript text, so untrusted: control and direction-override
//! characters are removed, length is bounded and `&` cannot become a mnemonic.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use mimesis_core::approval::{Behavior, Pending, Via};
use mimesis_core::attention::{AttentionSet, NotificationKind};
use mimesis_core::text::clean_text;
use mimesis_core::{SessionId, Status, StoreEvent, TrackedSession};
use mimesis_wiring::Engine;
use mimesis_wiring::approvals::Target;
use serde::Serialize;
use tauri::image::Image;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIcon, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager, Runtime};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

use crate::window;

/// At most this many sessions are listed in the menu; the rest are counted.
const MENU_SESSIONS: usize = 12;
/// Characters of a session's name in the menu.
const LABEL_CHARS: usize = 48;
/// A burst of changes redraws the tray once.
const SETTLE: Duration = Duration::from_millis(150);
/// Side of the drawn icon, in pixels.
const SIDE: u32 = 64;

const ID_SHOW: &str = "tray:show";
const ID_QUIT: &str = "tray:quit";
const ID_OPEN: &str = "tray:open:";
const ID_ALLOW: &str = "tray:allow:";
const ID_DENY: &str = "tray:deny:";

/// The tray and what it last showed.
pub struct Tray<R: Runtime> {
    icon: TrayIcon<R>,
    base: Vec<u8>,
    /// Crashed / terminated sessions as the notifications said (the roster row alone
    /// cannot tell them apart).
    kinds: Mutex<HashMap<SessionId, NotificationKind>>,
    shown_count: Mutex<Option<usize>>,
}

/// Creates the tray icon with an empty list. Where there is no tray host the icon is
/// simply not shown.
pub fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let base = base_icon();
    let menu = build_menu(app, &[], 0, &[], &[])?;
    let icon = TrayIconBuilder::with_id("main")
        .icon(Image::new_owned(draw_badge(&base, 0), SIDE, SIDE))
        .tooltip("Mimesis")
        .menu(&menu)
        .show_menu_on_left_click(false)
        .on_menu_event(|app, event| on_menu(app, event.id().as_ref()))
        .on_tray_icon_event(|tray, event| {
            // Windows and macOS: a left click shows the window; the menu is on the right button.
            if let TrayIconEvent::Click { button: MouseButton::Left, button_state: MouseButtonState::Up, .. } = event {
                window::show_main(tray.app_handle());
            }
        })
        .build(app)?;
    app.manage(Tray { icon, base, kinds: Mutex::new(HashMap::new()), shown_count: Mutex::new(None) });
    Ok(())
}

fn on_menu<R: Runtime>(app: &AppHandle<R>, id: &str) {
    match id {
        ID_SHOW => window::show_main(app),
        ID_QUIT => crate::quit::request(app),
        _ => {
            if let Some(sid) = id.strip_prefix(ID_OPEN).and_then(|s| SessionId::parse(s).ok()) {
                window::open_session(app, &sid);
            } else if let Some(key) = id.strip_prefix(ID_OPEN).filter(|k| crate::hosts::is_remote(k)) {
                window::open_key(app, key);
            } else if let Some((request, behavior)) = approval_item(id) {
                // The user's click: the one way a request is answered from the tray. (A
                // dialog's answer is typed into its screen: that takes a moment.)
                let Some(state) = app.try_state::<crate::commands::AppState>() else { return };
                let (mimesis, request, app) = (state.mimesis.clone(), request.to_owned(), app.clone());
                tauri::async_runtime::spawn(async move {
                    let session = mimesis.approvals().pending().into_iter().find(|p| p.id == request);
                    let decided =
                        mimesis.approvals().decide(Target::Id(&request), behavior, None, None, None, Via::Tray).await;
                    if let Err(e) = decided {
                        tracing::warn!(error = %e, "the tray's answer was not taken");
                        if let Some(p) = session {
                            crate::notify::show_text(
                                &app,
                                "Could not answer from the tray",
                                &e.to_string(),
                                &p.request.session_id,
                            );
                        }
                    }
                });
            }
        }
    }
}

/// A menu item that answers a permission request: its id and the answer.
fn approval_item(id: &str) -> Option<(&str, Behavior)> {
    let (rest, behavior) = match id.strip_prefix(ID_ALLOW) {
        Some(r) => (r, Behavior::Allow),
        None => (id.strip_prefix(ID_DENY)?, Behavior::Deny),
    };
    let hex = rest.strip_prefix(mimesis_core::approval::ID_PREFIX)?;
    (!hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some((rest, behavior))
}

/// Keeps the tray in step with the attention set and the words of the sessions in it, and
/// with the permission requests waiting for an answer.
pub async fn follow<R: Runtime>(
    app: AppHandle<R>,
    engine: Engine,
    mut approvals: Option<watch::Receiver<Vec<Pending>>>,
) {
    let mut attention = engine.subscribe_attention();
    let mut store = engine.subscribe();
    let mut notes = engine.subscribe_notifications();
    let mut current = attention.borrow_and_update().clone();
    let requests = approvals.as_mut().map(|a| a.borrow_and_update().clone()).unwrap_or_default();
    // Other machines' sessions that need the user count too.
    let mut remote = app.try_state::<crate::hosts::RemoteState>().map(|r| r.hub.subscribe());
    refresh(&app, &engine, &current, &requests).await;
    loop {
        tokio::select! {
            ev = async { match remote.as_mut() { Some(r) => r.recv().await, None => std::future::pending().await } } => match ev {
                Ok(mimesis_wiring::remote::HubEvent::Attention(_)) | Err(RecvError::Lagged(_)) => {}
                Ok(_) => continue,
                Err(RecvError::Closed) => { remote = None; continue }
            },
            changed = attention.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            ev = store.recv() => match ev {
                Ok(env) if touches(&env.event, &current) => {}
                Ok(_) => continue,
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            },
            () = crate::events::next_change(&mut approvals) => {}
            n = notes.recv() => {
                match n {
                    Ok(n) => note_kind(&app, &n.session_id, n.kind),
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                }
                continue;
            }
        }
        tokio::time::sleep(SETTLE).await;
        while store.try_recv().is_ok() {}
        // The engine sends a crash's notification just before the set changes: note its
        // kind before drawing, so the menu says "crashed" rather than "needs you".
        while let Ok(n) = notes.try_recv() {
            note_kind(&app, &n.session_id, n.kind);
        }
        current = attention.borrow_and_update().clone();
        let requests = approvals.as_mut().map(|a| a.borrow_and_update().clone()).unwrap_or_default();
        refresh(&app, &engine, &current, &requests).await;
    }
}

fn note_kind<R: Runtime>(app: &AppHandle<R>, id: &SessionId, kind: NotificationKind) {
    let Some(tray) = app.try_state::<Tray<R>>() else { return };
    let Ok(mut kinds) = tray.kinds.lock() else { return };
    match kind {
        NotificationKind::Crashed | NotificationKind::Terminated => {
            kinds.insert(id.clone(), kind);
        }
        NotificationKind::Recovered => {
            kinds.remove(id);
        }
        _ => {}
    }
}

/// Whether a store event changes how a listed session reads in the menu.
fn touches(ev: &StoreEvent, set: &AttentionSet) -> bool {
    match ev {
        StoreEvent::Updated { session_id, changes } => {
            set.session_ids.contains(session_id)
                && (changes.status.is_some()
                    || changes.title.is_some()
                    || changes.goal.is_some()
                    || changes.cwd.is_some())
        }
        _ => false,
    }
}

/// One listed session.
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
struct Entry {
    /// The window key: an id, or `host:id` for another machine's session.
    session_id: String,
    label: String,
}

/// What the tray shows, for `MIMESIS_TRAY_PROBE`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Probe<'a> {
    count: usize,
    tooltip: &'a str,
    entries: &'a [Entry],
    more: usize,
    /// The permission requests offered for an answer: their ids and labels.
    approvals: &'a [(String, String)],
}

async fn refresh<R: Runtime>(app: &AppHandle<R>, engine: &Engine, set: &AttentionSet, requests: &[Pending]) {
    let Some(tray) = app.try_state::<Tray<R>>() else { return };
    // Only the rows of the sessions listed (a copy of all 2,000 was taken when the attention
    // set was first said, as the window's first roster was completed).
    let sessions: HashMap<SessionId, TrackedSession> = match engine.sessions(set.session_ids.clone()).await {
        Ok(s) => s.into_iter().map(|s| (s.session_id.clone(), s)).collect(),
        Err(_) => return,
    };
    // A session that left the set is no longer crashed or terminated for the menu: when
    // it comes back (waiting for input after a resume), it is for another reason.
    let kinds = tray
        .kinds
        .lock()
        .map(|mut k| {
            k.retain(|id, _| set.session_ids.contains(id));
            k.clone()
        })
        .unwrap_or_default();
    let mut rows: Vec<(u8, i64, Entry)> = set
        .session_ids
        .iter()
        .map(|id| {
            let s = sessions.get(id);
            let (rank, state) = match (s.map(|s| s.status), kinds.get(id)) {
                (Some(Status::WaitingForApproval), _) => (0, "needs approval"),
                (_, Some(NotificationKind::Crashed)) => (1, "crashed"),
                (_, Some(NotificationKind::Terminated)) => (1, "terminated"),
                (Some(Status::WaitingForInput), _) => (2, "waiting for input"),
                _ => (1, "needs you"),
            };
            let name = s.map(session_name).unwrap_or_else(|| id.short().to_owned());
            let at = s.map(|s| s.last_activity_at.millis()).unwrap_or(0);
            let label = format!("{} — {state}", clean_label(&name, LABEL_CHARS));
            (rank, -at, Entry { session_id: id.to_string(), label })
        })
        .collect();
    // Other machines' sessions, after this machine's of the same rank.
    let remote: Vec<(String, Option<TrackedSession>)> = app
        .try_state::<crate::hosts::RemoteState>()
        .map(|r| r.hub.needs_you().into_iter().map(|k| (k.clone(), r.hub.row(&k))).collect())
        .unwrap_or_default();
    for (key, s) in &remote {
        let (rank, state) = match s.as_ref().map(|s| s.status) {
            Some(Status::WaitingForApproval) => (0, "needs approval"),
            Some(Status::WaitingForInput) => (2, "waiting for input"),
            _ => (1, "needs you"),
        };
        let host = s.as_ref().and_then(|s| s.host.clone()).unwrap_or_default();
        let name = s.as_ref().map(session_name).unwrap_or_else(|| key.clone());
        let at = s.as_ref().map(|s| s.last_activity_at.millis()).unwrap_or(0);
        let label = format!("{} — {state}", clean_label(&format!("{host}: {name}"), LABEL_CHARS));
        rows.push((rank, -at, Entry { session_id: key.clone(), label }));
    }
    rows.sort_by_key(|r| (r.0, r.1));
    let count = set.count + remote.len();
    let entries: Vec<Entry> = rows.into_iter().take(MENU_SESSIONS).map(|r| r.2).collect();
    let more = count.saturating_sub(entries.len());
    let tooltip = match count {
        0 => "Mimesis — no session needs you".to_owned(),
        1 => "Mimesis — 1 session needs you".to_owned(),
        n => format!("Mimesis — {n} sessions need you"),
    };
    // Only what can be answered from here (a dialog Mimesis cannot reach is answered in its
    // terminal); each item says what it does ("Stay in auto mode" for auto mode's dialog).
    let offered: Vec<&Pending> = requests.iter().filter(|r| r.channel.answerable()).take(MENU_SESSIONS).collect();
    let approvals: Vec<(String, String)> = offered
        .iter()
        .map(|r| {
            let name = sessions
                .get(&r.request.session_id)
                .map(session_name)
                .unwrap_or_else(|| r.request.session_id.short().to_owned());
            let what = match &r.request.target {
                Some(t) => format!("{} {}", r.request.tool, t),
                None => r.request.tool.clone(),
            };
            (r.id.clone(), format!("{} — {}", clean_label(&what, LABEL_CHARS), clean_label(&name, 24)))
        })
        .collect();
    let buttons: Vec<(String, String)> = offered
        .iter()
        .map(|r| {
            let label = |a: &Option<mimesis_core::answering::Action>, default: &str| {
                a.as_ref().map_or(default.to_owned(), |a| clean_label(&a.label, 40))
            };
            (label(&r.approve, "Approve once"), label(&r.deny, "Deny"))
        })
        .collect();
    match build_menu(app, &entries, more, &approvals, &buttons) {
        Ok(menu) => {
            if let Err(e) = tray.icon.set_menu(Some(menu)) {
                tracing::warn!(error = %e, "cannot update the tray menu");
            }
        }
        Err(e) => tracing::warn!(error = %e, "cannot build the tray menu"),
    }
    let redraw = tray.shown_count.lock().map(|mut c| c.replace(count) != Some(count)).unwrap_or(true);
    let icon = draw_badge(&tray.base, count);
    if redraw {
        let _ = tray.icon.set_icon(Some(Image::new_owned(icon.clone(), SIDE, SIDE)));
        let _ = tray.icon.set_title(Some(if count == 0 { String::new() } else { count.to_string() }));
    }
    let _ = tray.icon.set_tooltip(Some(&tooltip));
    write_probe(&Probe { count, tooltip: &tooltip, entries: &entries, more, approvals: &approvals }, &icon);
}

/// Tests read what the tray shows from the file named by `MIMESIS_TRAY_PROBE` (a tray host
/// cannot be observed under Xvfb), and the icon as raw RGBA (64×64) next to it with the
/// extension `rgba`. Nothing is written without it.
fn write_probe(p: &Probe, icon: &[u8]) {
    let Some(path) = std::env::var_os("MIMESIS_TRAY_PROBE") else { return };
    let path = std::path::PathBuf::from(path);
    let write = |path: &std::path::Path, bytes: &[u8]| mimesis_os::private::write_atomic(path, bytes);
    let ok = serde_json::to_vec(p)
        .map_err(std::io::Error::other)
        .and_then(|b| write(&path.with_extension("rgba"), icon).and_then(|()| write(&path, &b)));
    if let Err(e) = ok {
        tracing::warn!(error = %e, "cannot write the tray probe");
    }
}

/// How a session is called: its title, else its goal, else its folder, else its id.
fn session_name(s: &TrackedSession) -> String {
    s.title
        .as_deref()
        .or(s.goal.as_deref())
        .filter(|t| !t.trim().is_empty())
        .map(str::to_owned)
        .or_else(|| s.cwd.as_deref().and_then(|c| c.rsplit('/').find(|p| !p.is_empty())).map(str::to_owned))
        .unwrap_or_else(|| s.session_id.short().to_owned())
}

fn build_menu<R: Runtime>(
    app: &AppHandle<R>,
    entries: &[Entry],
    more: usize,
    approvals: &[(String, String)],
    buttons: &[(String, String)],
) -> tauri::Result<Menu<R>> {
    let menu = Menu::new(app)?;
    for ((id, label), (approve, deny)) in approvals.iter().zip(buttons) {
        menu.append(&MenuItem::with_id(app, format!("tray:asks:{id}"), label, false, None::<&str>)?)?;
        menu.append(&MenuItem::with_id(app, format!("{ID_ALLOW}{id}"), format!("    {approve}"), true, None::<&str>)?)?;
        menu.append(&MenuItem::with_id(app, format!("{ID_DENY}{id}"), format!("    {deny}"), true, None::<&str>)?)?;
    }
    if !approvals.is_empty() {
        menu.append(&PredefinedMenuItem::separator(app)?)?;
    }
    if entries.is_empty() {
        menu.append(&MenuItem::with_id(app, "tray:none", "No session needs you", false, None::<&str>)?)?;
    }
    for e in entries {
        menu.append(&MenuItem::with_id(app, format!("{ID_OPEN}{}", e.session_id), &e.label, true, None::<&str>)?)?;
    }
    if more > 0 {
        menu.append(&MenuItem::with_id(app, "tray:more", format!("… and {more} more"), false, None::<&str>)?)?;
    }
    menu.append(&PredefinedMenuItem::separator(app)?)?;
    menu.append(&MenuItem::with_id(app, ID_SHOW, "Show Mimesis", true, None::<&str>)?)?;
    menu.append(&MenuItem::with_id(app, ID_QUIT, "Quit Mimesis", true, None::<&str>)?)?;
    Ok(menu)
}

/// Untrusted text as a menu label: one line ([`clean_text`]), with `&` shown as itself
/// (not a mnemonic).
fn clean_label(text: &str, max: usize) -> String {
    clean_text(text, max).replace('&', "&&")
}

/// The app icon, scaled to the tray's size (decoded at compile time).
fn base_icon() -> Vec<u8> {
    let src = tauri::include_image!("../icons/128x128.png");
    let (w, h) = (src.width(), src.height());
    let rgba = src.rgba();
    let (fx, fy) = (w / SIDE, h / SIDE);
    let mut out = vec![0u8; (SIDE * SIDE * 4) as usize];
    for y in 0..SIDE {
        for x in 0..SIDE {
            let mut acc = [0u32; 4];
            for dy in 0..fy {
                for dx in 0..fx {
                    let i = (((y * fy + dy) * w + (x * fx + dx)) * 4) as usize;
                    for (a, v) in acc.iter_mut().zip(&rgba[i..i + 4]) {
                        *a += u32::from(*v);
                    }
                }
            }
            let o = ((y * SIDE + x) * 4) as usize;
            for (c, a) in acc.iter().enumerate() {
                out[o + c] = (a / (fx * fy).max(1)) as u8;
            }
        }
    }
    out
}

/// Digits and `+` in a 3×5 pixel font, one row per byte (bit 2 is the left column).
const GLYPHS: [[u8; 5]; 11] = [
    [0b111, 0b101, 0b101, 0b101, 0b111],
    [0b010, 0b110, 0b010, 0b010, 0b111],
    [0b111, 0b001, 0b111, 0b100, 0b111],
    [0b111, 0b001, 0b111, 0b001, 0b111],
    [0b101, 0b101, 0b111, 0b001, 0b001],
    [0b111, 0b100, 0b111, 0b001, 0b111],
    [0b111, 0b100, 0b111, 0b101, 0b111],
    [0b111, 0b001, 0b001, 0b001, 0b001],
    [0b111, 0b101, 0b111, 0b101, 0b111],
    [0b111, 0b101, 0b111, 0b001, 0b111],
    [0b000, 0b010, 0b111, 0b010, 0b000],
];

/// The icon with `count` in a red pill at its lower right (the icon alone at 0).
fn draw_badge(base: &[u8], count: usize) -> Vec<u8> {
    let mut px = base.to_vec();
    if count == 0 {
        return px;
    }
    let text: Vec<usize> =
        if count > 99 { vec![9, 9, 10] } else { count.to_string().bytes().map(|b| usize::from(b - b'0')).collect() };
    let scale = 4i32;
    let gap = scale;
    let text_w = text.len() as i32 * 3 * scale + (text.len() as i32 - 1) * gap;
    let text_h = 5 * scale;
    let h = text_h + 2 * scale + 4;
    let w = (text_w + 2 * scale + 4).max(h);
    let side = SIDE as i32;
    let (x0, y0) = (side - w, side - h);
    let r = h as f32 / 2.0;
    // The pill: a white rim, red inside; edges anti-aliased by coverage.
    for y in y0.max(0)..side {
        for x in x0.max(0)..side {
            let (cx, cy) = (x as f32 + 0.5, y as f32 + 0.5);
            let (left, right) = (x0 as f32 + r, (x0 + w) as f32 - r);
            let nx = cx.clamp(left, right);
            let d = ((cx - nx).powi(2) + (cy - (y0 as f32 + r)).powi(2)).sqrt();
            let outer = (r - d + 0.5).clamp(0.0, 1.0);
            if outer <= 0.0 {
                continue;
            }
            let inner = (r - 2.0 - d + 0.5).clamp(0.0, 1.0);
            let red = [0xd7u8, 0x26, 0x3d];
            let color: [f32; 3] = std::array::from_fn(|c| 255.0 * (1.0 - inner) + f32::from(red[c]) * inner);
            blend(&mut px, x, y, color, outer);
        }
    }
    let (tx, ty) = (x0 + (w - text_w) / 2, y0 + (h - text_h) / 2);
    for (i, g) in text.iter().enumerate() {
        let gx = tx + i as i32 * (3 * scale + gap);
        for (row, bits) in GLYPHS[*g].iter().enumerate() {
            for col in 0..3 {
                if bits & (0b100 >> col) == 0 {
                    continue;
                }
                for dy in 0..scale {
                    for dx in 0..scale {
                        blend(&mut px, gx + col * scale + dx, ty + row as i32 * scale + dy, [255.0; 3], 1.0);
                    }
                }
            }
        }
    }
    px
}

fn blend(px: &mut [u8], x: i32, y: i32, color: [f32; 3], alpha: f32) {
    let side = SIDE as i32;
    if !(0..side).contains(&x) || !(0..side).contains(&y) {
        return;
    }
    let i = ((y * side + x) * 4) as usize;
    let dst_a = f32::from(px[i + 3]) / 255.0;
    let out_a = alpha + dst_a * (1.0 - alpha);
    for c in 0..3 {
        let dst = f32::from(px[i + c]);
        let v = if out_a > 0.0 { (color[c] * alpha + dst * dst_a * (1.0 - alpha)) / out_a } else { 0.0 };
        px[i + c] = v.round().clamp(0.0, 255.0) as u8;
    }
    px[i + 3] = (out_a * 255.0).round() as u8;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 32, 3: the tray answers a request by its whole id, in its own form.
    #[test]
    fn a_menu_item_answers_a_request_named_by_its_whole_id() {
        let id = mimesis_core::approval::new_id([0x5b; 16]);
        assert_eq!(approval_item(&format!("{ID_ALLOW}{id}")), Some((id.as_str(), Behavior::Allow)));
        assert_eq!(approval_item(&format!("{ID_DENY}{id}")), Some((id.as_str(), Behavior::Deny)));
        for other in ["5b5b5b5b", "req_", "req_5b5b;rm", ""] {
            assert_eq!(approval_item(&format!("{ID_ALLOW}{other}")), None, "{other:?}");
        }
        assert_eq!(approval_item("tray:show"), None);
    }
}
