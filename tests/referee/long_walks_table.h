// Table 6 of referee_bench: what a party holds and recomputes to answer a
// dispute over the longest reduction walks (verify/partials.h).

#pragma once

namespace vt::referee_bench {

// quick: the CTest smoke sizes; gpt2: GPT-2 small's clip norm (124 439 808
// gradient terms) and loss (1 024 rows of 50 257 logits).
void LongWalksTable(bool quick, bool gpt2);

}  // namespace vt::referee_bench
