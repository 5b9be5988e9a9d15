//! `--tui`: the live terminal view of a load in this process (issue 26).
//! The terminal's side of it: raw mode and the alternate screen, a thread
//! that draws the board's newest frame four times a second and reads the
//! keys (`q`, Ctrl-C: stop the run), and the restore on every way out
//! (the normal end, an error, a panic, a second signal).
//!
//! Owns the terminal while the view is up. Must not compute or lay out
//! figures ([`crate::board`], [`crate::view`]), and must not print
//! anything: the report comes after the restore, from the caller.

use std::io::{self, IsTerminal as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::{cursor, execute, terminal};
use kurabe_stop::Stop;
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use crate::board::Frame;
use crate::view::View;

/// How often the view is redrawn.
const REDRAW: Duration = Duration::from_millis(250);

/// The terminal is in the view's mode (raw, alternate screen).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Why the terminal view cannot start or failed.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// Stdout is a file or a pipe.
    #[error("--tui draws on a terminal and stdout is not one: drop --tui (the report is the same) or run kurabe in a terminal")]
    NoTerminal,
    /// The terminal refused raw mode.
    #[error("--tui: cannot put the terminal in raw mode: {0}")]
    RawMode(#[source] io::Error),
    /// The terminal refused the alternate screen.
    #[error("--tui: cannot switch to the alternate screen: {0}")]
    Screen(#[source] io::Error),
    /// No thread for the view.
    #[error("--tui: cannot start the view's thread: {0}")]
    Thread(#[source] io::Error),
    /// Drawing or reading keys failed while the view was up.
    #[error("--tui: drawing the view failed: {0}")]
    Drawing(#[source] io::Error),
    /// A plan's workload (named) writes to the terminal the view owns.
    #[error("--tui: workload {0} writes to the terminal (output = \"inherit\"), which the view owns: set its output to \"null\", \"pipe\" or a file, or drop --tui")]
    Inherits(String),
}

/// `--tui` needs a terminal on stdout: one line saying so otherwise.
pub fn check_terminal() -> Result<(), TuiError> {
    if !io::stdout().is_terminal() {
        return Err(TuiError::NoTerminal);
    }
    Ok(())
}

/// What the view draws, asked before each redraw: the newest frame and
/// the title above it (a plan's changes from run to run).
pub type Picture = Arc<dyn Fn() -> (Arc<Frame>, String) + Send + Sync>;

/// The view while it is up; [`Tui::finish`] (or dropping it) restores the
/// terminal.
pub struct Tui {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Tui {
    /// Take the terminal and draw `picture` until finished; `q` or Ctrl-C
    /// trigger `interrupt`.
    pub fn start(picture: Picture, interrupt: Arc<Stop>) -> Result<Tui, TuiError> {
        restore_on_panic();
        terminal::enable_raw_mode().map_err(TuiError::RawMode)?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut tui = Tui {
            done: Arc::new(AtomicBool::new(false)),
            thread: None,
        };
        execute!(io::stdout(), terminal::EnterAlternateScreen, cursor::Hide)
            .map_err(TuiError::Screen)?;
        let done = Arc::clone(&tui.done);
        let thread = std::thread::Builder::new()
            .name("kurabe-tui".into())
            .spawn(move || draw_loop(&*picture, &interrupt, &done))
            .map_err(TuiError::Thread)?;
        tui.thread = Some(thread);
        Ok(tui)
    }

    /// Stop drawing and give the terminal back as it was.
    pub fn finish(mut self) -> Result<(), TuiError> {
        let drawn = self.stop();
        restore();
        drawn.map_err(TuiError::Drawing)
    }

    fn stop(&mut self) -> io::Result<()> {
        self.done.store(true, Ordering::SeqCst);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the view's thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.stop();
        restore();
    }
}

/// Draw every [`REDRAW`] (and at once on a resize), read keys, until `done`.
fn draw_loop(
    picture: &(dyn Fn() -> (Arc<Frame>, String) + Send + Sync),
    interrupt: &Stop,
    done: &AtomicBool,
) -> io::Result<()> {
    let mut term = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    let mut next = Instant::now();
    // A panic elsewhere restored the terminal: stop drawing on it.
    while !done.load(Ordering::SeqCst) && ACTIVE.load(Ordering::SeqCst) {
        if Instant::now() >= next {
            let (frame, title) = picture();
            term.draw(|f| {
                f.render_widget(
                    View {
                        frame: &frame,
                        title: &title,
                    },
                    f.area(),
                )
            })?;
            next = Instant::now() + REDRAW;
        }
        // A short poll: `done` is seen within 50 ms.
        let wait = next
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(50));
        let ready = match keys(wait) {
            // The terminal hung up (its window closed, its SSH session
            // dropped): nobody sees the view or can press q, and
            // crossterm's reader would spin on it. Stop the run, as
            // SIGHUP does, and stop drawing.
            Keys::Gone => {
                interrupt.trigger(None);
                return Ok(());
            }
            Keys::None => false,
            Keys::Some => event::poll(Duration::ZERO)?,
            Keys::Unwatched => event::poll(wait)?,
        };
        if !ready {
            continue;
        }
        match event::read()? {
            Event::Key(k) if k.kind != KeyEventKind::Release => {
                let ctrl_c =
                    k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                if ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Char('Q')) {
                    interrupt.trigger(None);
                }
            }
            Event::Resize(_, _) => {
                term.autoresize()?;
                next = Instant::now();
            }
            _ => {}
        }
    }
    Ok(())
}

/// What the terminal on standard input has for the view within a wait.
enum Keys {
    /// Input to read.
    Some,
    /// Nothing within the wait.
    None,
    /// It hung up.
    Gone,
    /// Standard input is no terminal: crossterm reads `/dev/tty` itself.
    Unwatched,
}

/// Wait at most `wait` for input on standard input, when it is the
/// terminal, and see whether that terminal hung up.
fn keys(wait: Duration) -> Keys {
    use std::os::fd::AsRawFd as _;
    let stdin = io::stdin();
    if !stdin.is_terminal() {
        return Keys::Unwatched;
    }
    let mut fd = libc::pollfd {
        fd: stdin.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd, alive for the call.
    let n = unsafe { libc::poll(&mut fd, 1, ms) };
    if n > 0 && fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        Keys::Gone
    } else if n > 0 {
        Keys::Some
    } else {
        // Nothing came, or a signal cut the wait short: look again.
        Keys::None
    }
}

/// Give the terminal back (cooked mode, main screen, cursor), once.
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = execute!(io::stdout(), cursor::Show, terminal::LeaveAlternateScreen);
        let _ = terminal::disable_raw_mode();
    }
}

/// A panic anywhere restores the terminal before its message is printed.
fn restore_on_panic() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
