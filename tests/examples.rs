//! The library examples' claims, on their own code.

#[path = "../examples/bma_regression.rs"]
mod bma_regression;
#[path = "../examples/classifier.rs"]
mod classifier;

#[test]
fn the_model_average_beats_the_last_sample_on_the_examples_data() {
    // The data's noise sd is 0.1, the floor of any predictor's RMSE; averaging the kept
    // networks removes the spread of the single sample around the posterior mean.
    let (average, last) = bma_regression::run(false).unwrap();
    println!("test RMSE: model average {average:.4}, last sample {last:.4}");
    assert!(average < last, "{average} vs {last}");
    assert!(average < 0.105, "{average}");
}

#[test]
fn the_classifiers_model_average_beats_its_last_sample_and_reloads_to_the_same_predictions() {
    // SGHMC and cyclical SGHMC, 2 chains each, on the digits (synthetic ones without data):
    // averaging the kept networks lowers the test NLL below the last network's (the average's
    // log-loss is at most the models' mean log-loss, by Jensen, and the last network is one
    // draw of it), and the saved posterior reloaded gives the run's averaged probabilities up
    // to the f32 rounding of the records (the same values go through the same forward pass).
    for o in classifier::run().unwrap() {
        let (a, l) = (&o.average, &o.last);
        println!(
            "{}: nll {:.4} (last {:.4}), acc {:.4} (last {:.4}), reloaded within {:.1e}",
            o.sampler, a.nll, l.nll, a.accuracy, l.accuracy, o.reloaded_difference
        );
        assert!(a.nll < l.nll, "{}: {} vs {}", o.sampler, a.nll, l.nll);
        assert!(a.mutual_information > 0.0, "{}", o.sampler);
        assert!(o.reloaded_difference < 1e-6, "{}", o.reloaded_difference);
    }
}
