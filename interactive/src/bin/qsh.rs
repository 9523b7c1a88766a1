//! `qsh`: SGE's xterm on a compute host (X11). Gantry does not provide it: it says so,
//! whatever it is asked, and names what does the same without X11.
fn main() {
    eprintln!(
        "Unsupported: qsh (an X11 xterm on a compute host) is not supported by Gantry: use qlogin, or qrsh command"
    );
    std::process::exit(5);
}
