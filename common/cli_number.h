#pragma once
// Strict whole-number options for CLI11 command lines (vt, vt-worker,
// vt-calibrate). CLI11 converts integers with strtoull/strtoll, which accept
// "-1" for an unsigned option (it becomes 2^64 - 1), clamp overflow and read
// "010" as octal; AddNumber checks the text with common/parse_number.h first
// and hands CLI11 only the canonical decimal, so `--amount -1` is a usage
// error that names the option and the accepted range.
//
// Header-only: only binaries that link CLI11 include it.

#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include <CLI/CLI.hpp>

#include "common/parse_number.h"

namespace vt::cli {

template <typename T>
struct NumberOf {
  using type = T;
};
template <typename T>
struct NumberOf<std::optional<T>> {
  using type = T;
};

// A CLI11 transform accepting whole numbers in [min, max] only.
template <typename T>
CLI::Validator StrictNumber(T min = std::numeric_limits<T>::min(), T max = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        if constexpr (std::is_unsigned_v<T>) {
          auto v = ParseUnsigned(text, max);
          if (!v.ok()) return v.status().detail();
          if (*v < min) return "'" + text + "' is below " + std::to_string(min);
          text = std::to_string(*v);
        } else {
          auto v = ParseSigned(text, min, max);
          if (!v.ok()) return v.status().detail();
          text = std::to_string(*v);
        }
        return {};
      },
      std::is_unsigned_v<T> ? "UINT" : "INT", "strict-number");
}

// app->add_option(name, target, description) for a whole number (or an
// optional one), parsed strictly within [min, max].
template <typename T, typename N = typename NumberOf<T>::type>
CLI::Option* AddNumber(CLI::App* app, const std::string& name, T& target, const std::string& description,
                       N min = std::numeric_limits<N>::min(), N max = std::numeric_limits<N>::max()) {
  return app->add_option(name, target, description)->transform(StrictNumber<N>(min, max));
}

}  // namespace vt::cli
