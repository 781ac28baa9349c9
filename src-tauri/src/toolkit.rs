//! What the app tells its toolkit (GTK, WebKit) through the environment, first thing in
//! `main`: no GL without a GPU, and a library for WebKit's helper processes to load first.
//! Each is set only when the user has not set it, and every program Mimesis starts gets the
//! user's values back (`mimesis_os::child_env`).

/// Sets the toolkit's environment. Call it before any other thread exists.
pub fn prepare() {
    let is_set = |var: &str| std::env::var_os(var).is_some();
    let mut vars = if crate::pty::gpu() { Vec::new() } else { without_gpu(is_set) };
    vars.extend(preload_for_webkit(is_set));
    // SAFETY: the first thing `main` does, before any thread exists.
    unsafe { mimesis_os::child_env::set_for_toolkit(&vars) };
}

/// What WebKit and GTK are told on a machine without a GPU (no DRM render node: a VM, a
/// remote desktop, Xvfb), but for what the user set:
/// - no accelerated compositing: in software (llvmpipe) every repaint composites the whole
///   window on the CPU, and the GL buffers cost about 100 MB; WebKit's plain software path
///   draws the same page at a fraction of both;
/// - no GL in the app's own process: GTK's GL (`GDK_GL`), the DMA-BUF renderer, and the
///   render node WebKit would otherwise find by starting EGL here. Each of them loads Mesa's
///   software driver and with it LLVM (about 25 MB of the app's memory with nothing to draw:
///   the window bench, 2,000 sessions). The web process still starts its own EGL: without
///   one it aborts ("Could not create default EGL display").
fn without_gpu(is_set: impl Fn(&str) -> bool) -> Vec<(&'static str, &'static str)> {
    const SETTINGS: [(&str, &str); 4] = [
        ("WEBKIT_DISABLE_COMPOSITING_MODE", "1"),
        ("WEBKIT_DISABLE_DMABUF_RENDERER", "1"),
        ("GDK_GL", "disable"),
        // There is none; named so WebKit does not look for one (its only use of EGL here).
        ("WEBKIT_WEB_RENDER_DEVICE_FILE", "/dev/dri/none"),
    ];
    SETTINGS.into_iter().filter(|(var, _)| !is_set(var)).collect()
}

/// WebKit's web and network processes load the same libraries as the app, and pay the same
/// cost the build script saves the app (build.rs, `FLITE_VOICE`): a speech voice whose
/// 31,000 references to its own symbols are each looked up in the ~60 libraries loaded
/// before it, about 1.8 million hash checks and 15–20 ms a process, the web process's on
/// the way to the first page. Preloaded, each is found in the first library searched. (The
/// symbols each reference binds to are the same either way: checked with `LD_DEBUG=bindings`
/// on both processes.) Only when the app was linked with it, and the user preloads nothing.
fn preload_for_webkit(is_set: impl Fn(&str) -> bool) -> Option<(&'static str, &'static str)> {
    let voice = option_env!("MIMESIS_FLITE_VOICE")?;
    (!is_set("LD_PRELOAD")).then_some(("LD_PRELOAD", voice))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_gpu_no_gl_is_started_but_what_the_user_set_stands() {
        let all = without_gpu(|_| false);
        let vars: Vec<&str> = all.iter().map(|(v, _)| *v).collect();
        assert_eq!(
            vars,
            [
                "WEBKIT_DISABLE_COMPOSITING_MODE",
                "WEBKIT_DISABLE_DMABUF_RENDERER",
                "GDK_GL",
                "WEBKIT_WEB_RENDER_DEVICE_FILE"
            ]
        );
        let kept = without_gpu(|v| v == "GDK_GL" || v == "WEBKIT_WEB_RENDER_DEVICE_FILE");
        assert_eq!(kept, [("WEBKIT_DISABLE_COMPOSITING_MODE", "1"), ("WEBKIT_DISABLE_DMABUF_RENDERER", "1")]);
    }

    #[test]
    fn webkit_preloads_the_voice_the_app_was_linked_with_unless_the_user_preloads() {
        let Some(voice) = option_env!("MIMESIS_FLITE_VOICE") else {
            assert_eq!(preload_for_webkit(|_| false), None);
            return;
        };
        assert_eq!(preload_for_webkit(|_| false), Some(("LD_PRELOAD", voice)));
        assert_eq!(preload_for_webkit(|v| v == "LD_PRELOAD"), None);
    }
}
