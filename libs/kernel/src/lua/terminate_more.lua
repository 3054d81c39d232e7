-- needs: budget objects terminal
-- Continues the tree's cascade of terminal transitions (lib_terminal.lua): at most A.tb children
-- from its queue, the first queued parents first. Called by the kernel after a script whose reply
-- said work was left (`tq`), until one says none is; the retention sweep calls it for a cascade
-- its caller left unfinished. Reply head: `tq` while work is left.
cascade()
return reply({})
