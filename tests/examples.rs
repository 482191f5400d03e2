//! The library examples' claims, on their own code.

#[path = "../examples/bma_regression.rs"]
mod bma_regression;

#[test]
fn the_model_average_beats_the_last_sample_on_the_examples_data() {
    // The data's noise sd is 0.1, the floor of any predictor's RMSE; averaging the kept
    // networks removes the spread of the single sample around the posterior mean.
    let (average, last) = bma_regression::run(false).unwrap();
    println!("test RMSE: model average {average:.4}, last sample {last:.4}");
    assert!(average < last, "{average} vs {last}");
    assert!(average < 0.105, "{average}");
}
