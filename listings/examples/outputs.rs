//! Print every registered output to DIR/NAME.txt (default
//! target/outputs), to compare the book's printed results before and after
//! a change: `cargo run -p listings --example outputs -- DIR`.
fn main() {
    let dir = std::env::args().nth(1).map_or_else(
        || {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../target/outputs")
        },
        std::path::PathBuf::from,
    );
    std::fs::create_dir_all(&dir).expect("create the output directory");
    for output in listings::outputs::ALL {
        let path = dir.join(format!("{}.txt", output.name));
        std::fs::write(&path, (output.run)()).expect("write the output");
        println!("{}", path.display());
    }
}
