# nextpnr-ice40 --pre-pack: the clocks' targets, in MHz.
ctx.addClock("clk_i", 12)
ctx.addClock("clk", 4)
