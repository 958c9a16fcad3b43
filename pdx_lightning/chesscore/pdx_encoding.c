/* The compiled core's encoding (pdx_encoding.h). */
#include <string.h>

#include "pdx_encoding.h"

PDX_INTERNAL void pack_one(const Game *g, uint64_t *o) {
    const Pos *p = &g->pos;
    memset(o, 0, 100 * sizeof *o);
    int us = p->turn, flip = us == 1;
    for (int h = 0; h < HIST; h++) {
        const uint64_t *s;
        int rep;
        if (h < g->nsnap) { int j = (g->head + h) % HIST; s = g->snap[j]; rep = g->rep[j]; }
        else if (g->from_start) continue;
        else { s = g->fill; rep = g->fill_rep; }
        for (int t = 0; t < 6; t++) {
            uint64_t ours = s[us * 6 + t], theirs = s[(!us) * 6 + t];
            if (flip) { ours = __builtin_bswap64(ours); theirs = __builtin_bswap64(theirs); }
            o[12 * h + t] = ours;
            o[12 * h + 6 + t] = theirs;
        }
        if (rep) o[96] |= 1ULL << h;
    }
    uint64_t cr = p->castling;
    int wq = (cr & 1) != 0, wk = (cr >> 7 & 1) != 0, bq = (cr >> 56 & 1) != 0, bk = (cr >> 63 & 1) != 0;
    o[97] = (uint64_t)(flip ? bq : wq) | (uint64_t)(flip ? bk : wk) << 1 | (uint64_t)(flip ? wq : bq) << 2
          | (uint64_t)(flip ? wk : bk) << 3;
    o[98] = (uint64_t)flip;
    o[99] = (uint64_t)p->halfmove;
}

static void fill_plane(float *plane, float v) {
    for (int q = 0; q < 64; q++) plane[q] = v;
}

PDX_INTERNAL void encode_one(const Game *g, float *o) {
    uint64_t w[100];
    pack_one(g, w);
    memset(o, 0, 112 * 64 * sizeof(float));
    for (int h = 0; h < HIST; h++) {
        for (int k = 0; k < 12; k++)
            for (uint64_t b = w[12 * h + k]; b; b &= b - 1) o[(13 * h + k) * 64 + lsb(b)] = 1.0f;
        if (w[96] >> h & 1) fill_plane(o + (13 * h + 12) * 64, 1.0f);
    }
    for (int k = 0; k < 4; k++) if (w[97] >> k & 1) fill_plane(o + (104 + k) * 64, 1.0f);
    fill_plane(o + 108 * 64, (float)w[98]);
    fill_plane(o + 109 * 64, (float)w[99]);
    fill_plane(o + 111 * 64, 1.0f);
}

PDX_INTERNAL int legal_row(const Game *g, int64_t *ix, uint8_t *mask) {
    int k = g->nlegal;
    for (int i = 0; i < k; i++) {      /* insertion sort: k < MAX_MOVES */
        int64_t v = g->legal_index[i];
        int j = i;
        while (j > 0 && ix[j - 1] > v) { ix[j] = ix[j - 1]; j--; }
        ix[j] = v;
    }
    for (int i = k; i < LEGAL_STRIDE; i++) ix[i] = k ? ix[0] : 0;
    if (mask) {
        memset(mask, 0, POLICY);
        for (int i = 0; i < k; i++) mask[ix[i]] = 1;
    }
    return k;
}
