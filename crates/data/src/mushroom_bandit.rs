//! The mushroom bandit's rewards, regret and inputs (thesis sec. 6.4.3, Riquelme et al. 2018).
//!
//! Two actions per mushroom: not eat (reward 0) or eat (edible: +5; poisonous: -35 or +5 with
//! probability 1/2 each, mean -15). The oracle eats exactly the edible ones, so its expected
//! reward is 5 for an edible mushroom and 0 for a poisonous one. The regret of a pull is the
//! oracle's expected reward minus the expected reward of the action taken:
//!
//! | mushroom  | eat        | not eat |
//! |-----------|------------|---------|
//! | edible    | 5 - 5 = 0  | 5 - 0 = 5 |
//! | poisonous | 0 + 15 = 15| 0 - 0 = 0 |
//!
//! Using the expected reward (not the drawn one) removes the coin's variance from the regret;
//! the agent still learns from the drawn reward.

/// Eating an edible mushroom, or a lucky poisonous one.
pub const GOOD: f64 = 5.0;
/// Eating an unlucky poisonous mushroom.
pub const BAD: f64 = -35.0;

/// The two actions, in the order of their one-hot input columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Leave the mushroom.
    Pass,
    /// Eat it.
    Eat,
}

impl Action {
    /// The action's one-hot column (0 pass, 1 eat).
    pub fn index(self) -> usize {
        match self {
            Self::Pass => 0,
            Self::Eat => 1,
        }
    }
}

/// The reward drawn for `action` on a mushroom; `heads` is the fair coin that decides a
/// poisonous mushroom's reward (+5 on heads, -35 otherwise).
pub fn reward(poisonous: bool, action: Action, heads: bool) -> f64 {
    match (action, poisonous, heads) {
        (Action::Pass, _, _) => 0.0,
        (Action::Eat, false, _) | (Action::Eat, true, true) => GOOD,
        (Action::Eat, true, false) => BAD,
    }
}

/// The expected reward of `action`.
pub fn expected_reward(poisonous: bool, action: Action) -> f64 {
    match (action, poisonous) {
        (Action::Pass, _) => 0.0,
        (Action::Eat, false) => GOOD,
        (Action::Eat, true) => 0.5 * (GOOD + BAD),
    }
}

/// The oracle's expected reward: it eats the edible mushrooms only.
pub fn oracle(poisonous: bool) -> f64 {
    if poisonous { 0.0 } else { GOOD }
}

/// The expected regret of `action`.
pub fn regret(poisonous: bool, action: Action) -> f64 {
    oracle(poisonous) - expected_reward(poisonous, action)
}

/// Appends the input row of a mushroom with its one-hot features `features` and `action` to
/// `row`: the features, then the action's one-hot pair (pass, eat).
pub fn input(features: &[f32], action: Action, row: &mut Vec<f32>) {
    row.extend_from_slice(features);
    row.extend([0.0, 0.0]);
    let at = row.len() - 2 + action.index();
    row[at] = 1.0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewards_and_regret_by_hand() {
        use Action::{Eat, Pass};
        assert_eq!(reward(false, Eat, false), 5.0);
        assert_eq!(reward(true, Eat, true), 5.0);
        assert_eq!(reward(true, Eat, false), -35.0);
        assert_eq!(reward(true, Pass, false), 0.0);
        assert_eq!(expected_reward(true, Eat), -15.0);
        // The table of the module docs.
        assert_eq!(regret(false, Eat), 0.0);
        assert_eq!(regret(false, Pass), 5.0);
        assert_eq!(regret(true, Eat), 15.0);
        assert_eq!(regret(true, Pass), 0.0);
        // A run of pulls: pass an edible (5), eat a poisonous (15), eat an edible (0), pass a
        // poisonous (0): cumulative regret 20, whatever the coins.
        let pulls = [(false, Pass), (true, Eat), (false, Eat), (true, Pass)];
        let mut row = vec![9.0];
        input(&[1.0, 0.0], Eat, &mut row);
        input(&[0.0, 1.0], Pass, &mut row);
        assert_eq!(row, [9.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]);
        let total: f64 = pulls.iter().map(|&(p, a)| regret(p, a)).sum();
        assert_eq!(total, 20.0);
        // The expected reward is the mean over the coin.
        for p in [false, true] {
            for a in [Pass, Eat] {
                let mean = 0.5 * (reward(p, a, true) + reward(p, a, false));
                assert_eq!(mean, expected_reward(p, a));
            }
        }
    }
}
