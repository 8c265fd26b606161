//! Text output over semihosting, without any `static` (each [`Console`] opens the host's stdout).

use core::fmt::Write as _;

use cortex_m_semihosting::{debug, hio};

/// The host's standard output.
pub struct Console(Option<hio::HostStream>);

impl Console {
    /// Opens the host's stdout (output is dropped if the host refuses).
    pub fn open() -> Self {
        Console(hio::hstdout().ok())
    }

    /// Writes one line.
    pub fn line(&mut self, args: core::fmt::Arguments) {
        if let Some(s) = &mut self.0 {
            let _ = s.write_fmt(args);
            let _ = s.write_str("\n");
        }
    }
}

/// The panic handler's body: print the message and exit QEMU with failure.
pub fn panicked(info: &core::panic::PanicInfo) -> ! {
    Console::open().line(format_args!("FAIL: panic: {info}"));
    debug::exit(debug::EXIT_FAILURE);
    #[allow(clippy::empty_loop)]
    loop {}
}
