//! `redlock run|status|list|release|acquire|extend ...`

fn main() {
    std::process::exit(redlock::entry::redlock(std::env::args_os()).into());
}
