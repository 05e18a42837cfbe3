//! Write every figure to target/figures/NAME.svg, for looking at one by one:
//! `cargo run -p figures --example render`, or only those whose names
//! are given: `cargo run -p figures --example render -- speed-crossover`.
fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/figures");
    std::fs::create_dir_all(&dir).expect("create target/figures");
    for fig in figures::ALL {
        if !only.is_empty() && !only.iter().any(|n| n == fig.name) {
            continue;
        }
        let path = dir.join(format!("{}.svg", fig.name));
        std::fs::write(&path, (fig.render)()).expect("write the figure");
        println!("{}", path.display());
    }
}
