-- Every write adds its items' term counts to term_df, thousands of rows per
-- batch of documents. With pages left half empty the new row version of a
-- count fits on the page of the old one (a HOT update), so the primary key
-- is not written again for every count a write changes. CLUSTER rewrites
-- the rows already there with the new fill factor.
ALTER TABLE term_df SET (fillfactor = 50);
CLUSTER term_df USING term_df_pkey;
