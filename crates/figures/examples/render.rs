//! Write every figure to target/figures/NAME.svg, for looking at one by one:
//! `cargo run -p figures --example render`.
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/figures");
    std::fs::create_dir_all(&dir).expect("create target/figures");
    for fig in figures::ALL {
        let path = dir.join(format!("{}.svg", fig.name));
        std::fs::write(&path, (fig.render)()).expect("write the figure");
        println!("{}", path.display());
    }
}
