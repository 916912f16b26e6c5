import { useId } from 'react';

/** The labelled e-mail input of the signed-out forms: required, filled in by the browser's saved sign-in. */
export function EmailField({ value, onChange }: { value: string; onChange: (value: string) => void }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>Email address</label>
      <input
        id={id}
        className="input"
        type="email"
        autoComplete="username"
        required
        value={value}
        onChange={(e) => onChange(e.target.value)}
      />
    </div>
  );
}
