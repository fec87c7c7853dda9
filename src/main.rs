fn main() {
    println!("nbcuda: under construction");
}
