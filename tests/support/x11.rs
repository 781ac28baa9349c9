//! Closing the app's window as the user does with its close button: what a window manager
//! then sends the window, an ICCCM `WM_DELETE_WINDOW` message, sent here on the test's
//! private display (Xvfb has no window manager), through the system's libX11 loaded at run
//! time (`x11-dl`, already in the app's dependencies through tao).

use std::ffi::{CString, c_char, c_int, c_long, c_uchar, c_uint, c_ulong};
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use x11_dl::xlib::{self, Display, Xlib};

use crate::webdriver::DesktopSession;

/// Asks every mapped toplevel window of process `pid` (as its `_NET_WM_PID` says) on
/// `session`'s display to close;
/// returns how many were asked.
pub fn ask_to_close(session: &DesktopSession, pid: u32) -> Result<usize> {
    let x = Xlib::open().context("libX11 is missing: install the Debian package libx11-6")?;
    let cookie = cookie(Path::new(&session.xauthority), &session.display)?;
    let name = CString::new(session.display.as_str())?;
    // SAFETY: plain Xlib calls on a display opened and closed here; every pointer handed
    // over lives across the call that reads it, and what Xlib returns is freed with XFree.
    unsafe {
        if let Some(data) = &cookie {
            let mut proto = *b"MIT-MAGIC-COOKIE-1";
            let mut data = data.clone();
            (x.XSetAuthorization)(
                proto.as_mut_ptr().cast::<c_char>(),
                proto.len() as c_int,
                data.as_mut_ptr().cast::<c_char>(),
                data.len() as c_int,
            );
        }
        let dpy = (x.XOpenDisplay)(name.as_ptr());
        if dpy.is_null() {
            bail!("cannot open the display {}", session.display);
        }
        let result = close_windows_of(&x, dpy, pid);
        (x.XCloseDisplay)(dpy);
        result
    }
}

/// # Safety
/// `dpy` is an open display of `x`.
unsafe fn close_windows_of(x: &Xlib, dpy: *mut Display, pid: u32) -> Result<usize> {
    let atom = |name: &str| -> Result<c_ulong> {
        let name = CString::new(name)?;
        // SAFETY: as the caller says; `name` lives across the call.
        Ok(unsafe { (x.XInternAtom)(dpy, name.as_ptr(), xlib::False) })
    };
    let (wm_pid, protocols, delete) = (atom("_NET_WM_PID")?, atom("WM_PROTOCOLS")?, atom("WM_DELETE_WINDOW")?);
    // SAFETY: as the caller says.
    let root = unsafe { (x.XDefaultRootWindow)(dpy) };
    let mut asked = 0;
    // SAFETY: as the caller says.
    for w in unsafe { children(x, dpy, root) } {
        // SAFETY: as the caller says; the attributes are written by the call.
        let mapped = unsafe {
            let mut attrs: xlib::XWindowAttributes = std::mem::zeroed();
            // (Not a popup, a tooltip or a menu: no window manager asks those to close.)
            (x.XGetWindowAttributes)(dpy, w, &mut attrs) != 0
                && attrs.map_state == xlib::IsViewable
                && attrs.override_redirect == xlib::False
        };
        // SAFETY: as the caller says.
        if !mapped || unsafe { cardinal(x, dpy, w, wm_pid) } != Some(c_ulong::from(pid)) {
            continue;
        }
        let mut data = xlib::ClientMessageData::new();
        data.set_long(0, delete as c_long);
        data.set_long(1, xlib::CurrentTime as c_long);
        let message = xlib::XClientMessageEvent {
            type_: xlib::ClientMessage,
            serial: 0,
            send_event: xlib::True,
            display: dpy,
            window: w,
            message_type: protocols,
            format: 32,
            data,
        };
        let mut event = xlib::XEvent { client_message: message };
        // SAFETY: as the caller says; the event lives across the call.
        ensure!(
            unsafe { (x.XSendEvent)(dpy, w, xlib::False, xlib::NoEventMask, &mut event) } != 0,
            "XSendEvent failed"
        );
        asked += 1;
    }
    // SAFETY: as the caller says.
    unsafe { (x.XSync)(dpy, xlib::False) };
    Ok(asked)
}

/// The children of `w`.
///
/// # Safety
/// `dpy` is an open display of `x`.
unsafe fn children(x: &Xlib, dpy: *mut Display, w: c_ulong) -> Vec<c_ulong> {
    let (mut root, mut parent, mut list, mut n): (c_ulong, c_ulong, *mut c_ulong, c_uint) =
        (0, 0, std::ptr::null_mut(), 0);
    // SAFETY: as the caller says; the out-parameters are written by the call.
    if unsafe { (x.XQueryTree)(dpy, w, &mut root, &mut parent, &mut list, &mut n) } == 0 || list.is_null() {
        return Vec::new();
    }
    // SAFETY: Xlib returned `n` windows at `list`, freed right after the copy.
    unsafe {
        let out = std::slice::from_raw_parts(list, n as usize).to_vec();
        (x.XFree)(list.cast());
        out
    }
}

/// The first CARDINAL of property `prop` of window `w`.
///
/// # Safety
/// `dpy` is an open display of `x`.
unsafe fn cardinal(x: &Xlib, dpy: *mut Display, w: c_ulong, prop: c_ulong) -> Option<c_ulong> {
    let (mut kind, mut format, mut n, mut after, mut data): (c_ulong, c_int, c_ulong, c_ulong, *mut c_uchar) =
        (0, 0, 0, 0, std::ptr::null_mut());
    // SAFETY: as the caller says; the out-parameters are written by the call.
    let ok = unsafe {
        (x.XGetWindowProperty)(
            dpy,
            w,
            prop,
            0,
            1,
            xlib::False,
            xlib::XA_CARDINAL,
            &mut kind,
            &mut format,
            &mut n,
            &mut after,
            &mut data,
        )
    } == 0;
    if data.is_null() {
        return None;
    }
    // SAFETY: a 32-bit property comes as C longs; `data` holds `n` of them, freed after.
    unsafe {
        let value = (ok && format == 32 && n >= 1).then(|| *(data.cast::<c_ulong>()));
        (x.XFree)(data.cast());
        value
    }
}

/// The MIT-MAGIC-COOKIE-1 of `display` in the authority file at `path` (`xvfb-run`'s), if any.
fn cookie(path: &Path, display: &str) -> Result<Option<Vec<u8>>> {
    if path.as_os_str().is_empty() {
        return Ok(None);
    }
    let raw = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let number = display.rsplit_once(':').map_or("", |(_, n)| n.split('.').next().unwrap_or(""));
    let mut at = 2; // each record: family (2 bytes), then address, number, name, data (each length-prefixed)
    let field = |at: &mut usize| -> Option<Vec<u8>> {
        let len = usize::from(u16::from_be_bytes([*raw.get(*at)?, *raw.get(*at + 1)?]));
        let v = raw.get(*at + 2..*at + 2 + len)?.to_vec();
        *at += 2 + len;
        Some(v)
    };
    while at <= raw.len() {
        let (Some(_address), Some(num), Some(name), Some(data)) =
            (field(&mut at), field(&mut at), field(&mut at), field(&mut at))
        else {
            break;
        };
        if name == b"MIT-MAGIC-COOKIE-1" && num == number.as_bytes() {
            return Ok(Some(data));
        }
        at += 2;
    }
    Ok(None)
}
