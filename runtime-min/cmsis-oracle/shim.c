/* Out-of-line wrappers around CMSIS-NN's inline fixed-point helpers (arm_nnsupportfunctions.h),
 * so the oracle tests can call them from Rust. Written for sramfit; no CMSIS-NN code is copied. */
#include "arm_nnsupportfunctions.h"

int32_t oracle_doubling_high_mult(int32_t a, int32_t b) { return arm_nn_doubling_high_mult(a, b); }

int32_t oracle_divide_by_power_of_two(int32_t x, int32_t exponent) { return arm_nn_divide_by_power_of_two(x, exponent); }

int32_t oracle_requantize(int32_t x, int32_t multiplier, int32_t shift) { return arm_nn_requantize(x, multiplier, shift); }

int32_t oracle_exp_on_negative_values(int32_t x) { return arm_nn_exp_on_negative_values(x); }

int32_t oracle_one_over_one_plus_x(int32_t x) { return arm_nn_one_over_one_plus_x_for_x_in_0_1(x); }
