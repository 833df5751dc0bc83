//! The keys (and resizes) of the terminal `top` runs in, and noticing that
//! the terminal went away.
//!
//! A terminal that goes away (its window closed, the SSH connection lost,
//! the tmux pane killed) hangs up: reading it returns end-of-file at once,
//! again and again. crossterm 0.29's event reader loops on that without
//! returning, even from `event::poll` with a timeout, so `top` would never
//! see its stop flag and would spin at full CPU forever. So `top` waits on
//! the terminal itself, with `poll(2)`, and hands it to crossterm only while
//! it has not hung up.

use std::fs::File;
use std::io::{self, IsTerminal as _};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use ratatui::crossterm::event::{self, Event};
use rustix::event::{PollFd, PollFlags, Timespec};

/// What waiting on the terminal gave.
#[derive(Debug)]
pub enum Input {
    /// A key, a resize…
    Event(Event),
    /// Nothing within the time given.
    Nothing,
    /// The terminal hung up: nobody is looking any more.
    Gone,
}

/// The terminal crossterm reads events from: standard input when it is a
/// terminal, `/dev/tty` otherwise (crossterm's own choice).
pub enum TerminalInput {
    /// Standard input, a terminal.
    Stdin(io::Stdin),
    /// `/dev/tty`, standard input being no terminal.
    DevTty(File),
}

impl TerminalInput {
    /// The terminal of this process.
    pub fn open() -> io::Result<TerminalInput> {
        let stdin = io::stdin();
        Ok(if stdin.is_terminal() {
            TerminalInput::Stdin(stdin)
        } else {
            TerminalInput::DevTty(File::open("/dev/tty")?)
        })
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            TerminalInput::Stdin(stdin) => stdin.as_fd(),
            TerminalInput::DevTty(file) => file.as_fd(),
        }
    }

    /// Whether the terminal hung up, waiting for input up to `timeout`.
    fn hung_up(&self, timeout: Duration) -> io::Result<bool> {
        let timeout = Timespec {
            tv_sec: timeout.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: timeout.subsec_nanos().into(),
        };
        let mut fds = [PollFd::from_borrowed_fd(self.fd(), PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(_) => Ok(fds[0]
                .revents()
                .intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL)),
            // A signal (a resize, SIGTERM): the caller looks again.
            Err(rustix::io::Errno::INTR) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The next event of the terminal, waiting up to `timeout` for one.
    pub fn wait(&mut self, timeout: Duration) -> io::Result<Input> {
        // crossterm is asked only while the terminal is there; first for
        // what it holds already (keys read together, a resize), then, after
        // waiting, for what came.
        for wait in [Duration::ZERO, timeout] {
            if self.hung_up(wait)? {
                return Ok(Input::Gone);
            }
            if event::poll(Duration::ZERO)? {
                return Ok(Input::Event(event::read()?));
            }
        }
        Ok(Input::Nothing)
    }
}
