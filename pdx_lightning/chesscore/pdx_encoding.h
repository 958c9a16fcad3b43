/* The compiled core's encoding: Lc0's classic 112 input planes (chesscore.encoding) and policy indices
 * (chesscore.moves). */
#ifndef PDX_ENCODING_H
#define PDX_ENCODING_H

#include <stdint.h>

#include "pdx_rules.h"

/* the policy index (0..POLICY - 1) of move m with `turn` to move */
static inline int move_index(uint16_t m, int turn) {
    int f = m & 63, t = m >> 6 & 63, promo = m >> 12;
    if (turn) { f ^= 56; t ^= 56; }
    if (promo == 0 || promo == 2) return f * 64 + t;
    return 4096 + (f % 8) * 24 + (t % 8) * 3 + (promo == 5 ? 0 : promo == 4 ? 1 : 2);
}

/* one position's planes packed, 100 words (chesscore.encoding.pack_planes): 0..95 the 8 x 12 history
   bitboards in the mover's frame (mover first, mirrored for Black; zero, or the root fill, before the
   history starts), 96 the repetition bits (bit h), 97 the castling planes 104..107 (bits 0..3), 98 Black
   to move, 99 the halfmove clock */
PDX_INTERNAL void pack_one(const Game *g, uint64_t *o);
/* one position's 112 planes, (112, 64) float32, fully overwritten */
PDX_INTERNAL void encode_one(const Game *g, float *o);
/* the game's legal policy indices in ascending order, ix (LEGAL_STRIDE) padded with the first (0 when
   none); mask (POLICY, fully overwritten) unless NULL; returns how many */
PDX_INTERNAL int legal_row(const Game *g, int64_t *ix, uint8_t *mask);

#endif
