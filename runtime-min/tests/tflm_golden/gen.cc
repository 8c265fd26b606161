// Generates tables.rs: the int8 (and uint8) outputs of TensorFlow Lite Micro's reference kernels
// for LOGISTIC, TANH, HARD_SWISH and LEAKY_RELU on all 256 inputs, for a few quantization
// parameter sets. The kernels and helpers are TFLite's own headers, only #included; the parameter
// preparation below restates TFLite Micro's Prepare functions (logistic_common.cc, tanh.cc,
// hard_swish_common.cc, leaky_relu_common.cc) with TFLite's helper functions.
//
// Regenerate (checkouts of tensorflow/tflite-micro and google/gemmlowp in $TFLM and $GEMMLOWP,
// and $STUB holding a no-op ruy/profiler/instrumentation.h, which TFLite Micro's makefiles
// download with ruy):
//   g++ -std=c++17 -O1 -I$TFLM -I$GEMMLOWP -I$STUB gen.cc \
//       $TFLM/tensorflow/lite/kernels/internal/quantization_util.cc \
//       $TFLM/tensorflow/lite/kernels/internal/common.cc $TFLM/tensorflow/lite/micro/micro_log.cc \
//       -o gen && ./gen > tables.rs
// tables.rs was generated from tflite-micro 90b983c2b3f1480642e040bbd2ddb37b998f3424 and gemmlowp
// 16e8662c34917be0065110bfcd9cc27d30f52fdf.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

#include "tensorflow/lite/kernels/internal/common.h"
#include "tensorflow/lite/kernels/internal/quantization_util.h"
#include "tensorflow/lite/kernels/internal/reference/hard_swish.h"
#include "tensorflow/lite/kernels/internal/reference/integer_ops/logistic.h"
#include "tensorflow/lite/kernels/internal/reference/integer_ops/tanh.h"
#include "tensorflow/lite/kernels/internal/reference/leaky_relu.h"
#include "tensorflow/lite/kernels/internal/reference/tanh.h"

using namespace tflite;

// A one-dimensional shape of 256 elements.
static RuntimeShape flat() {
  const int32_t dims[1] = {256};
  return RuntimeShape(1, dims);
}

template <typename T>
static void inputs(T* in) {
  for (int i = 0; i < 256; ++i) in[i] = static_cast<T>(i);  // entry i: the input whose byte is i
}

// The shortest decimal that reads back as the same f32.
static std::string shortest(float v) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  std::string s(buf, end);
  return s.find_first_of(".e") == std::string::npos ? s + ".0" : s;
}

static std::string list(std::initializer_list<float> values) {
  std::string s;
  for (float v : values) s += (s.empty() ? "" : ", ") + shortest(v);
  return s;
}

template <typename T>
static void print(const char* op, const char* type, const std::string& params, const T* out) {
  printf("    (\"%s\", \"%s\", &[%s], [", op, type, params.c_str());
  for (int i = 0; i < 256; ++i) printf("%s%d", i ? ", " : "", static_cast<int>(out[i]));
  printf("]),\n");
}

// logistic_common.cc / tanh.cc: input_scale * 2^27, frexp, TfLiteRound, CalculateInputRadius.
static void activation_input(float input_scale, int32_t* multiplier, int* shift, int32_t* radius) {
  const double real = static_cast<double>(input_scale) * static_cast<double>(1 << (31 - 4));
  const double q = std::frexp(real, shift);
  *multiplier = static_cast<int32_t>(TfLiteRound(q * (1ll << 31)));
  *radius = CalculateInputRadius(4, *shift, 31);
}

static void logistic(float scale, int zp) {
  int32_t m, r;
  int s;
  activation_input(scale, &m, &s, &r);
  int8_t in[256], out[256];
  inputs(in);
  reference_integer_ops::Logistic(zp, r, m, s, 256, in, out);
  print("logistic", "i8", list({scale, float(zp)}), out);
}

static void tanh_i8(float scale, int zp) {
  int32_t m, r;
  int s;
  activation_input(scale, &m, &s, &r);
  int8_t in[256], out[256];
  inputs(in);
  const RuntimeShape shape = flat();
  reference_integer_ops::Tanh(zp, r, m, s, shape, in, shape, out);
  print("tanh", "i8", list({scale, float(zp)}), out);
}

// TFLite's uint8 TANH (kernels/activations.cc): QuantizeMultiplierGreaterThanOne of the same real.
static void tanh_u8(float scale, int zp) {
  TanhParams p;
  const double real = static_cast<double>(scale) * static_cast<double>(1 << (31 - 4));
  QuantizeMultiplierGreaterThanOne(real, &p.input_multiplier, &p.input_left_shift);
  p.input_range_radius = CalculateInputRadius(4, p.input_left_shift, 31);
  p.input_zero_point = zp;
  uint8_t in[256], out[256];
  inputs(in);
  const RuntimeShape shape = flat();
  reference_ops::Tanh(p, shape, in, shape, out);
  print("tanh", "u8", list({scale, float(zp)}), out);
}

template <typename T>
static void hard_swish(const char* type, float input_scale, int izp, float output_scale, int ozp) {
  HardSwishParams p;
  p.input_zero_point = izp;
  p.output_zero_point = ozp;
  const float hires_input_scale = (1.0f / 128.0f) * input_scale;
  const float reluish_scale = 3.0f / 32768.0f;
  int32_t m32;
  QuantizeMultiplier(static_cast<double>(hires_input_scale / output_scale), &m32, &p.output_multiplier_exponent);
  DownScaleInt32ToInt16Multiplier(m32, &p.output_multiplier_fixedpoint_int16);
  QuantizeMultiplier(static_cast<double>(hires_input_scale / reluish_scale), &m32, &p.reluish_multiplier_exponent);
  DownScaleInt32ToInt16Multiplier(m32, &p.reluish_multiplier_fixedpoint_int16);
  T in[256], out[256];
  inputs(in);
  const RuntimeShape shape = flat();
  reference_ops::HardSwish(p, shape, in, shape, out);
  print("hard_swish", type, list({input_scale, float(izp), output_scale, float(ozp)}), out);
}

template <typename T>
static void leaky_relu(const char* type, float input_scale, int izp, float alpha, float output_scale, int ozp) {
  LeakyReluParams p;
  p.input_offset = izp;
  p.output_offset = ozp;
  int shift;
  QuantizeMultiplier(static_cast<double>(input_scale * alpha / output_scale), &p.output_multiplier_alpha, &shift);
  p.output_shift_alpha = shift;
  QuantizeMultiplier(static_cast<double>(input_scale / output_scale), &p.output_multiplier_identity, &shift);
  p.output_shift_identity = shift;
  T in[256], out[256];
  inputs(in);
  const RuntimeShape shape = flat();
  reference_ops::QuantizeLeakyRelu(p, shape, in, shape, out);
  print("leaky_relu", type, list({input_scale, float(izp), alpha, output_scale, float(ozp)}), out);
}

int main() {
  printf("// Generated by gen.cc from TensorFlow Lite Micro's reference kernels: do not edit.\n");
  printf("/// (operator, element type, parameters, outputs for the inputs whose byte is 0..=255).\n");
  printf("#[rustfmt::skip]\n");
  printf("pub const TABLES: &[(&str, &str, &[f32], [i32; 256])] = &[\n");
  for (auto [s, z] : {std::pair{0.1f, 0}, {0.0625f, -20}, {0.2f, 50}, {0.01f, -128}, {1.5f, 3}, {0.0234375f, 7}}) {
    logistic(s, z);
    tanh_i8(s, z);
  }
  for (auto [s, z] : {std::pair{0.05f, 128}, {0.1f, 100}, {0.007f, 0}}) tanh_u8(s, z);
  hard_swish<int8_t>("i8", 0.05f, -10, 0.03f, -100);
  hard_swish<int8_t>("i8", 0.2f, 5, 0.1f, -128);
  hard_swish<int8_t>("i8", 0.01f, 0, 0.02f, 20);
  hard_swish<int8_t>("i8", 0.5f, -50, 0.25f, 0);
  hard_swish<int8_t>("i8", 0.0117f, 3, 0.006f, -90);
  hard_swish<uint8_t>("u8", 0.04f, 128, 0.03f, 10);
  leaky_relu<int8_t>("i8", 0.05f, 3, 0.1f, 0.04f, -7);
  leaky_relu<int8_t>("i8", 0.1f, -20, 0.2f, 0.1f, 10);
  leaky_relu<int8_t>("i8", 0.05f, 0, -0.5f, 0.05f, 0);
  leaky_relu<int8_t>("i8", 0.02f, 10, 1.5f, 0.03f, -3);
  leaky_relu<uint8_t>("u8", 0.03f, 128, 0.01f, 0.02f, 64);
  printf("];\n");
}
